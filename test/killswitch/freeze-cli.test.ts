import test, { type ExecutionContext } from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { authorize } from '../helpers/gate.js';
import { assertError, bearer, call, csrf, type Json } from '../helpers/http.js';
import { stopAndClean, svc } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';
import { about, addPerson, makeBot, pay, SERVER_ENV, type Bot } from '../approvals/support.js';

/**
 * `svc freeze --local`: the kill switch from the terminal, written on the store while
 * the server runs. The server reads standing from the store on every request, so the very next
 * authorize is refused. The hold is `operator`, and only a person lifts it: restart is a session
 * route, and a key presented as a bearer there is not a credential at all. Serial: the CLI opens
 * the server's store.
 */

let server: ServedInProcess;
let owner: Person;
let member: Person;

const PAY = [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 }];

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
  member = await addPerson(server, owner.wid, 'member@example.com', 'member');
});

test.after.always(() => stopAndClean(server));

function freeze(args: string[]) {
  return svc(['freeze', ...args, '--data-dir', server.dataDir, '--json']);
}

function parse(t: ExecutionContext, stdout: string): Json {
  try {
    return JSON.parse(stdout);
  } catch {
    t.fail(`stdout is not one JSON document: ${stdout}`);
    return undefined;
  }
}

async function decisionOf(bot: Bot): Promise<{ decision: string; signals: string[] }> {
  const res = await authorize(server, bot.key, pay(100, 'cli'));
  if (res.status !== 200) throw new Error(`authorize: ${res.status} ${res.text}`);
  return { decision: res.body.decision, signals: res.body.signals };
}

const FROZEN = { decision: 'deny', signals: ['agent_frozen'] };

test.serial(
  'svc freeze --local --agent: exit 0, { frozen: 1, agentIds, hold: operator }; the very next authorize is deny agent_frozen; other agents run',
  async (t) => {
    const target = await makeBot(owner, 'cli-target', PAY);
    const bystander = await makeBot(owner, 'cli-bystander', PAY);
    t.is((await decisionOf(target)).decision, 'allow');

    const res = await freeze(['--local', '--agent', target.agentId, '--reason', 'runaway spend']);
    t.is(res.code, 0, res.stderr);
    t.deepEqual(parse(t, res.stdout), { frozen: 1, agentIds: [target.agentId], hold: 'owner' });

    t.deepEqual(await decisionOf(target), FROZEN);
    t.is((await decisionOf(bystander)).decision, 'allow');

    const view = await owner.get(`/agents/${target.agentId}`);
    t.is(view.body.status, 'stopped');
    t.is(view.body.holds.length, 1);
    t.like(view.body.holds[0], { hold: 'owner', reason: 'runaway spend', by: 'operator:cli' });
    const stopped = (await about(owner, target.agentId)).filter((r) => r.kind === 'agent.stopped');
    t.is(stopped.length, 1);
    t.like(stopped[0]?.data, { hold: 'owner', reason: 'runaway spend' });

    // No key lifts it: restart is a session route; a bearer key there is no credential.
    const agentKey = await call(server.url, 'POST', `/api/w/${owner.wid}/agents/${target.agentId}/restart`, {
      headers: { ...csrf, ...bearer(target.key) },
    });
    assertError(t, agentKey, 401, 'unauthenticated');
    const minted = await owner.send('POST', '/keys', { scope: 'admin', name: 'ops' });
    t.is(minted.status, 201, minted.text);
    const adminKey = await call(server.url, 'POST', `/api/w/${owner.wid}/agents/${target.agentId}/restart`, {
      headers: { ...csrf, ...bearer(minted.body.key) },
    });
    assertError(t, adminKey, 401, 'unauthenticated');
    t.deepEqual(await decisionOf(target), FROZEN);

    // A person lifts it.
    const restarted = await owner.send('POST', `/agents/${target.agentId}/restart`);
    t.is(restarted.status, 200, restarted.text);
    t.is(restarted.body.status, 'running');
    t.is((await decisionOf(target)).decision, 'allow');
    const lifted = (await about(owner, target.agentId)).filter((r) => r.kind === 'agent.restarted');
    t.deepEqual(
      lifted.map((r) => [r.actor, r.data.lifted]),
      [[`user:${owner.id}`, ['owner']]],
    );
  },
);

test.serial(
  'the terminal writes the same hold as the console: freezing a stopped agent updates that hold, and one restart by the member the agent acts for lifts it',
  async (t) => {
    const bot = await makeBot(owner, 'cli-two-holds', PAY, member.id);
    t.is((await owner.send('POST', `/agents/${bot.agentId}/stop`, { reason: 'console' })).status, 200);
    const res = await freeze(['--local', '--agent', bot.agentId, '--reason', 'terminal']);
    t.is(res.code, 0, res.stderr);
    const view = await owner.get(`/agents/${bot.agentId}`);
    t.deepEqual(
      view.body.holds.map((h: { hold: string; by: string; reason: string }) => [h.hold, h.by, h.reason]),
      [['owner', 'operator:cli', 'terminal']],
    );
    t.deepEqual(await decisionOf(bot), FROZEN);

    const restarted = await member.send('POST', `/agents/${bot.agentId}/restart`);
    t.is(restarted.status, 200, restarted.text);
    t.deepEqual(restarted.body.holds, []);
    t.is((await decisionOf(bot)).decision, 'allow');
  },
);

test.serial(
  'svc freeze --local --all stops every live agent and turns on "stop every agent" (so later agents are stopped too)',
  async (t) => {
    const fleet = [await makeBot(owner, 'cli-all-1', PAY), await makeBot(owner, 'cli-all-2', PAY, member.id)];
    const removed = await makeBot(owner, 'cli-all-removed', PAY);
    t.is((await owner.send('DELETE', `/agents/${removed.agentId}`)).status, 200);
    const live = (await owner.get('/agents?limit=200')).body.data.map((a: { id: string }) => a.id) as string[];
    t.false(live.includes(removed.agentId));

    // --all needs the count, as through the server: without it, 409 confirm_count_required with the count now.
    const uncounted = await freeze(['--local', '--all', '--reason', 'incident 7']);
    t.is(uncounted.code, 1, uncounted.stdout + uncounted.stderr);
    t.like(parse(t, uncounted.stdout).error, { type: 'confirm_count_required', count: live.length });
    const miscounted = await freeze(['--local', '--all', '--reason', 'incident 7', '--confirm-count', '999']);
    t.like(parse(t, miscounted.stdout).error, { type: 'selection_changed', oldCount: 999, newCount: live.length });
    for (const bot of fleet) t.is((await decisionOf(bot)).decision, 'allow', 'nothing frozen without the right count');

    const res = await freeze(['--local', '--all', '--reason', 'incident 7', '--confirm-count', String(live.length)]);
    t.is(res.code, 0, res.stderr);
    const out = parse(t, res.stdout);
    t.is(out.hold, 'owner');
    t.is(out.frozen, live.length);
    t.deepEqual([...out.agentIds].sort(), [...live].sort());

    for (const bot of fleet) t.deepEqual(await decisionOf(bot), FROZEN);
    const agents = (await owner.get('/agents?limit=200')).body.data as {
      id: string;
      status: string;
      holds: { hold: string; by: string }[];
    }[];
    for (const agent of agents) {
      t.is(agent.status, 'stopped', agent.id);
      t.true(agent.holds.some((h) => h.hold === 'owner' && h.by === 'operator:cli'));
    }

    t.like((await owner.get('/stop-all')).body, { stopped: true, reason: 'incident 7', by: 'operator:cli' });
    const later = await makeBot(owner, 'cli-all-later', PAY);
    t.deepEqual(await decisionOf(later), FROZEN, 'an agent created after the freeze is stopped too');

    t.is((await owner.send('DELETE', '/stop-all')).status, 200);
    for (const id of live) t.is((await owner.send('POST', `/agents/${id}/restart`)).status, 200);
    for (const bot of [...fleet, later]) t.is((await decisionOf(bot)).decision, 'allow');
  },
);

test.serial(
  'svc freeze through the server without a service token is a usage error (exit 2) and stops nothing',
  async (t) => {
    const bot = await makeBot(owner, 'cli-no-local', PAY);
    const res = await freeze(['--agent', bot.agentId, '--reason', 'remote']);
    t.is(res.code, 2, res.stdout + res.stderr);
    t.is((await decisionOf(bot)).decision, 'allow');
    t.is((await owner.get(`/agents/${bot.agentId}`)).body.status, 'running');
  },
);

test.serial(
  'svc freeze usage errors: no reason, an empty reason, both --agent and --all, neither: exit 2',
  async (t) => {
    const bot = await makeBot(owner, 'cli-usage', PAY);
    for (const args of [
      ['--local', '--agent', bot.agentId],
      ['--local', '--agent', bot.agentId, '--reason', '  '],
      ['--local', '--agent', bot.agentId, '--all', '--reason', 'both'],
      ['--local', '--reason', 'neither'],
    ]) {
      const res = await freeze(args);
      t.is(res.code, 2, `${args.join(' ')}: ${res.stdout}${res.stderr}`);
    }
    t.is((await decisionOf(bot)).decision, 'allow');
  },
);

test.serial('svc freeze --local on an unknown agent fails (not 0) and names it not found', async (t) => {
  const res = await freeze(['--local', '--agent', 'agt_0000000000000000000000', '--reason', 'typo']);
  t.not(res.code, 0);
  t.not(res.code, null);
  t.regex(res.stdout + res.stderr, /not.?found|no such agent/i);
});

test.serial(
  'through the server with SVC_TOKEN: one agent, a confirmed selection, a miscounted one (exit 1), and the ceiling (pending)',
  async (t) => {
    const token = await withStore(
      server.dataDir,
      async (app) =>
        (
          await app.services.serviceTokens.create(owner.wid, {
            name: 'ci-cli',
            scopes: ['agents:freeze'],
            expiresInDays: 1,
          })
        ).token,
    );
    const remote = (args: string[]) =>
      svc(['freeze', ...args, '--url', server.url, '--json'], { env: { SVC_TOKEN: token } });
    const one = await makeBot(owner, 'cli-remote-one', PAY);
    const res = await remote(['--agent', one.agentId, '--reason', 'remote']);
    t.is(res.code, 0, res.stdout + res.stderr);
    t.deepEqual(JSON.parse(res.stdout), { frozen: 1, agentIds: [one.agentId], hold: 'token' });
    t.deepEqual(await decisionOf(one), FROZEN);

    const tagged = [await makeBot(owner, 'cli-remote-a', PAY), await makeBot(owner, 'cli-remote-b', PAY)];
    for (const bot of tagged)
      t.is((await owner.send('PATCH', `/agents/${bot.agentId}`, { tags: ['cli-fleet'] })).status, 200);
    const miscounted = await remote(['--selector', 'tag=cli-fleet', '--reason', 'fleet', '--confirm-count', '3']);
    t.is(miscounted.code, 1, miscounted.stdout);
    t.is(JSON.parse(miscounted.stdout).error.type, 'selection_changed');
    for (const bot of tagged) t.is((await decisionOf(bot)).decision, 'allow', 'nothing frozen on a miscount');

    const fleet = await remote(['--selector', 'tag=cli-fleet', '--reason', 'fleet', '--confirm-count', '2']);
    t.is(fleet.code, 0, fleet.stdout + fleet.stderr);
    t.like(JSON.parse(fleet.stdout), { frozen: 2, hold: 'token' });
    for (const bot of tagged) t.deepEqual(await decisionOf(bot), FROZEN);

    for (const bot of [one, ...tagged]) t.is((await owner.send('POST', `/agents/${bot.agentId}/restart`)).status, 200);
    const bad = await remote(['--selector', 'colour=red', '--reason', 'x', '--confirm-count', '1']);
    t.is(bad.code, 2, bad.stdout);
  },
);

// Last: it freezes every agent of the workspace. `svc freeze --all --local` puts an `owner` hold on
// each agent listed and also turns on "stop every agent", so an agent created afterwards (by any
// member, during the incident) is refused too, not allowed while the operator believes every
// agent is frozen.
test.serial('after svc freeze --all, an agent created later is stopped too', async (t) => {
  const before = await makeBot(owner, 'before-freeze-all', PAY);
  const count = (await owner.get('/agents?limit=200')).body.data.length as number;
  const run = await freeze(['--all', '--confirm-count', String(count), '--reason', 'incident 42', '--local']);
  t.is(run.code, 0, run.stderr);
  const old = await authorize(server, before.key, pay(100));
  t.deepEqual(old.body.signals, ['agent_frozen'], old.text);

  const later = await makeBot(owner, 'after-freeze-all', PAY);
  const res = await authorize(server, later.key, pay(100));
  t.is(res.status, 200, res.text);
  t.is(
    res.body.decision,
    'deny',
    `an agent created after freeze --all was ${res.body.decision} (receipt ${res.body.receipt ? 'issued' : 'none'})`,
  );
  t.deepEqual(res.body.signals, ['agent_frozen']);
});
