import test from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';
import { serviceToken } from '../helpers/tokens.js';

/**
 * POST /v1/admin/drills, as a pipeline calls it with a service token (`svc drill` is the same
 * route: test/cli/drill.test.ts): a drill runs against an agent of its own, answers 201 with its
 * report, is in the ledger, and leaves real agents serving; a second drill within the hour is
 * refused before it runs; a token without agents:freeze, or any other credential, is refused.
 */
let server: ServedInProcess;
let owner: Person;

test.before(async () => {
  server = await serveInProcess();
  owner = await ownerConsole(server);
});

test.after.always(() => stopAndClean(server));

test.serial(
  'a drill answers 201 with a passing report for each enforcement point, recorded, real agents untouched',
  async (t) => {
    const real = await createAgent(server);
    const token = await serviceToken(owner, 'route-drill', ['agents:freeze']);
    const agentsBefore = (await owner.get('/agents?limit=200')).body.data.length;

    const res = await call(server.url, 'POST', '/v1/admin/drills', { headers: bearer(token), json: {} });
    t.is(res.status, 201, res.text);
    t.true(res.body.passed);
    t.regex(res.body.id, /^[a-z]+_[0-9A-Za-z]+$/);
    t.deepEqual(
      res.body.points.map((p: { point: string; passed: boolean }) => [p.point, p.passed]),
      [
        ['gate', true],
        ['gateway', true],
        ['mcp', true],
      ],
    );
    for (const point of res.body.points) t.is(typeof point.timeToEffectMs, 'number', point.point);
    t.true(Date.parse(res.body.finishedAt) >= Date.parse(res.body.startedAt));

    // The drill's own agent is gone; the real one still gets its allow.
    t.is((await owner.get('/agents?limit=200')).body.data.length, agentsBefore);
    t.is((await authorize(server, real.key, payment(100))).body.decision, 'allow');
    const completed = (await owner.ledger()).filter((r) => r.kind === 'drill.completed');
    t.is(completed.length, 1);
    t.like(completed[0], { actor: 'token:route-drill', data: { passed: true } });

    // Within the hour: refused before anything runs, with when to come back.
    const again = await call(server.url, 'POST', '/v1/admin/drills', { headers: bearer(token), json: {} });
    assertError(t, again, 429, 'drill_cooldown');
    t.regex(String(again.headers['retry-after']), /^[1-9]\d*$/);
    t.is((await owner.ledger()).filter((r) => r.kind === 'drill.completed').length, 1, 'the refused drill did not run');
  },
);

test.serial('a token without agents:freeze, an agent key or no credential cannot run a drill', async (t) => {
  const reader = await serviceToken(owner, 'route-reader', ['agents:read']);
  assertError(
    t,
    await call(server.url, 'POST', '/v1/admin/drills', { headers: bearer(reader), json: {} }),
    403,
    'missing_scope',
  );
  const agent = await createAgent(server);
  // An agent key is no credential of the admin routes at all.
  assertError(
    t,
    await call(server.url, 'POST', '/v1/admin/drills', { headers: bearer(agent.key), json: {} }),
    401,
    'unauthenticated',
  );
  assertError(t, await call(server.url, 'POST', '/v1/admin/drills', { json: {} }), 401, 'unauthenticated');
  t.is((await owner.ledger()).filter((r) => r.kind === 'drill.completed').length, 1, 'no drill ran for them');
});
