import test from 'ava';
import { ownerConsole } from '../helpers/console.js';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { stopAndClean, svc, svcOnTerminal } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';

/**
 * What a CI pipeline runs (issue 5): `svc drill --json` against a live server with a token exits
 * 0 with a passing report; a second run within the hour exits non-zero with the cooldown message.
 * A drill freezes only an agent of its own, lifts only its own hold, and is in the ledger.
 */
let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess();
});

test.after.always(() => stopAndClean(server));

test.serial(
  'svc drill: exit 0 and a passing report; again within the hour: refused without running, exit 4, drill_cooldown',
  async (t) => {
    const real = await createAgent(server);
    const owner = await ownerConsole(server);
    const { token, reader } = await withStore(server.dataDir, async (app) => ({
      token: (
        await app.services.serviceTokens.create(owner.wid, {
          name: 'ci-drill',
          scopes: ['agents:freeze'],
          expiresInDays: 1,
        })
      ).token,
      reader: (
        await app.services.serviceTokens.create(owner.wid, {
          name: 'ci-read',
          scopes: ['agents:read'],
          expiresInDays: 1,
        })
      ).token,
    }));
    const before = (await owner.get('/agents?limit=200')).body.data.length;

    const run = await svc(['drill', '--url', server.url, '--json'], { env: { SVC_TOKEN: token } });
    t.is(run.code, 0, run.stdout + run.stderr);
    const report = JSON.parse(run.stdout);
    t.notRegex(run.stderr, /Running a kill-switch drill/, 'no progress display when stderr is not a terminal');
    t.true(report.passed);
    t.deepEqual(
      report.points.map((p: { point: string }) => p.point),
      ['gate', 'gateway', 'mcp'],
    );
    t.like(report.points[0], { point: 'gate', passed: true });
    t.like(report.points[1], { point: 'gateway', passed: true });
    t.like(report.points[2], { point: 'mcp', passed: true });
    t.is(typeof report.points[1].timeToEffectMs, 'number');
    t.is(typeof report.points[0].timeToEffectMs, 'number');

    // Real agents are untouched; the drill agent is gone.
    t.is((await authorize(server, real.key, payment(100))).body.decision, 'allow');
    t.is((await owner.get('/agents?limit=200')).body.data.length, before);
    const drillRecord = (await owner.ledger()).find((r) => r.kind === 'drill.completed');
    t.like(drillRecord, { actor: 'token:ci-drill', data: { passed: true } });
    // Everything the drill wrote (its agent, mandate, hold, removal) names the token and its id.
    const byToken = (await owner.ledger()).filter((r) => r.actor === 'token:ci-drill');
    t.deepEqual(
      byToken.map((r) => r.kind),
      [
        'agent.created',
        'mandate.updated',
        'agent.stopped',
        'agent.drill_hold_lifted',
        'agent.removed',
        'drill.completed',
      ],
    );
    t.is(new Set(byToken.map((r) => (r as unknown as { tokenId: string }).tokenId)).size, 1);
    t.truthy((byToken[0] as unknown as { tokenId?: string }).tokenId);

    const again = await svc(['drill', '--url', server.url, '--json'], { env: { SVC_TOKEN: token } });
    // Refused without running: exit 4, not 1, so a CI re-run within the hour is not a failed drill.
    t.is(again.code, 4, again.stdout);
    t.like(JSON.parse(again.stdout).error, { type: 'drill_cooldown', exitCode: 4 });
    t.is((await owner.ledger()).filter((r) => r.kind === 'drill.completed').length, 1, 'the refused drill did not run');
    const human = await svc(['drill', '--url', server.url], { env: { SVC_TOKEN: token } });
    t.is(human.code, 4);
    t.regex(human.stderr, /not run: .*drill/i);

    const http = await call(server.url, 'POST', '/v1/admin/drills', { headers: bearer(token), json: {} });
    assertError(t, http, 429, 'drill_cooldown');
    t.regex(String(http.headers['retry-after']), /^\d+$/);
    assertError(
      t,
      await call(server.url, 'POST', '/v1/admin/drills', { headers: bearer(reader), json: {} }),
      403,
      'missing_scope',
    );
  },
);

test.serial('on a terminal svc drill shows its progress, then the report', async (t) => {
  const owner = await ownerConsole(server);
  const token = await withStore(
    server.dataDir,
    async (app) =>
      (
        await app.services.serviceTokens.create(owner.wid, {
          name: 'desk-drill',
          scopes: ['agents:freeze'],
          expiresInDays: 1,
        })
      ).token,
  );
  const run = await svcOnTerminal(['drill', '--url', server.url], { SVC_TOKEN: token });
  t.is(run.code, 0, run.stdout);
  t.regex(run.stdout, /Running a kill-switch drill/);
  t.regex(run.stdout, /passed {2}gate /);
  t.regex(run.stdout, /passed {2}gateway /);
  t.regex(run.stdout, /passed {2}mcp /);
  t.regex(run.stdout, /drill passed/);
});
