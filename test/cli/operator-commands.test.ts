import test, { type ExecutionContext } from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { authorize } from '../helpers/gate.js';
import { bearer, call, type Json } from '../helpers/http.js';
import { startServer, stopAndClean, svc, type CliResult, type RunningServer } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';
import { about, makeBot, pay, SERVER_ENV, type Bot } from '../approvals/support.js';

/**
 * The operator's day from a terminal (issue 18.6), through the spawned svc against a
 * real server: stop and restart an agent, "stop every agent" on, off and status, service tokens
 * minted, listed and revoked, keys listed and revoked, approvals read. Each goes through the
 * server with a credential of the right scope or `--local` on the store, and writes the ledger
 * records the console writes for the same act. Lifting holds and service tokens are `--local`
 * only. Serial: `--local` opens the server's store, and the tests share its agents.
 */

let server: RunningServer;
let owner: Person;
let tokens: { freezer: string; reader: string; approvals: string };

const PAY = [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 }];

test.before(async () => {
  server = await startServer({ env: { ...SERVER_ENV, SVC_BULK_FREEZE_CEILING: '3' } });
  owner = await ownerConsole(server);
  tokens = await withStore(server.dataDir, async (app) => {
    const mint = async (name: string, scopes: Array<'agents:freeze' | 'agents:read' | 'approvals:read'>) =>
      (await app.services.serviceTokens.create(owner.wid, { name, scopes, expiresInDays: 1 })).token;
    return {
      freezer: await mint('ops-freeze', ['agents:freeze', 'agents:read']),
      reader: await mint('ops-read', ['agents:read']),
      approvals: await mint('ops-approvals', ['approvals:read']),
    };
  });
});

test.after.always(() => stopAndClean(server));

const local = (args: string[]) => svc([...args, '--local', '--data-dir', server.dataDir, '--json']);
const remote = (args: string[], token: string, name = 'SVC_TOKEN') =>
  svc([...args, '--url', server.url, '--json'], { env: { [name]: token } });

function json(t: ExecutionContext, res: CliResult): Json {
  try {
    return JSON.parse(res.stdout);
  } catch {
    t.fail(`stdout is not one JSON document (exit ${res.code}): ${res.stdout}${res.stderr}`);
    return undefined;
  }
}

/** Is the agent refused as frozen on its very next request? */
const frozen = async (on: RunningServer, bot: Bot) => {
  const res = await authorize(on, bot.key, pay(100, 'ops'));
  if (res.status !== 200) throw new Error(`authorize: ${res.status} ${res.text}`);
  return res.body.decision === 'deny' && (res.body.signals as string[]).includes('agent_frozen');
};

test.serial(
  'svc agents stop: through the server hold token (the ledger names the token); --local hold owner, as the console',
  async (t) => {
    const bot = await makeBot(owner, 'ops-stop', PAY);
    const byToken = await remote(['agents', 'stop', bot.agentId, '--reason', 'runaway spend'], tokens.freezer);
    t.is(byToken.code, 0, byToken.stderr);
    t.like(json(t, byToken), {
      id: bot.agentId,
      status: 'stopped',
      holds: [{ hold: 'token', reason: 'runaway spend' }],
    });
    t.true(await frozen(server, bot));
    const stopped = (await about(owner, bot.agentId)).filter((r) => r.kind === 'agent.stopped');
    t.like(stopped.at(-1), { actor: 'token:ops-freeze', data: { hold: 'token', reason: 'runaway spend' } });
    t.truthy((stopped.at(-1) as unknown as { tokenId?: string }).tokenId);

    const reader = await remote(['agents', 'stop', bot.agentId, '--reason', 'x'], tokens.reader);
    t.is(reader.code, 1, reader.stdout);
    t.is(json(t, reader).error.type, 'missing_scope');

    const byOperator = await local(['agents', 'stop', bot.agentId, '--reason', 'incident 7']);
    t.is(byOperator.code, 0, byOperator.stderr);
    const holds = json(t, byOperator).holds.map((h: { hold: string; by: string }) => [h.hold, h.by]);
    t.deepEqual(holds, [
      ['token', 'token:ops-freeze'],
      ['owner', 'operator:cli'],
    ]);
    // The console's Stop writes the same record kind and data.
    const viaConsole = await makeBot(owner, 'ops-stop-console', PAY);
    t.is((await owner.send('POST', `/agents/${viaConsole.agentId}/stop`, { reason: 'incident 7' })).status, 200);
    const [fromConsole] = (await about(owner, viaConsole.agentId)).filter((r) => r.kind === 'agent.stopped');
    const fromCli = (await about(owner, bot.agentId)).filter((r) => r.kind === 'agent.stopped').at(-1);
    t.deepEqual(fromCli?.data, fromConsole?.data);
    t.is(fromCli?.actor, 'operator:cli');

    for (const args of [
      ['agents', 'stop', bot.agentId],
      ['agents', 'stop', bot.agentId, '--reason', ' '],
    ]) {
      const usage = await local(args);
      t.is(usage.code, 2, `${args.join(' ')}: ${usage.stdout}`);
    }
  },
);

test.serial(
  'svc agents restart lifts every hold, --local only: through the server it is a usage error and lifts nothing',
  async (t) => {
    const bot = await makeBot(owner, 'ops-restart', PAY);
    t.is((await remote(['agents', 'stop', bot.agentId, '--reason', 'a'], tokens.freezer)).code, 0);
    t.is((await local(['agents', 'stop', bot.agentId, '--reason', 'b'])).code, 0);

    const byToken = await remote(['agents', 'restart', bot.agentId], tokens.freezer);
    t.is(byToken.code, 2, byToken.stdout);
    t.like(json(t, byToken).error, { type: 'local_only', exitCode: 2 });
    t.true(await frozen(server, bot), 'still stopped');

    const restarted = await local(['agents', 'restart', bot.agentId]);
    t.is(restarted.code, 0, restarted.stderr);
    t.like(json(t, restarted), { id: bot.agentId, status: 'running', holds: [] });
    t.false(await frozen(server, bot));
    const lifted = (await about(owner, bot.agentId)).filter((r) => r.kind === 'agent.restarted');
    t.deepEqual(
      lifted.map((r) => [r.actor, r.data.lifted]),
      [['operator:cli', ['token', 'owner']]],
    );
    const unknown = await local(['agents', 'restart', 'agt_0000000000000000000000']);
    t.is(unknown.code, 1);
    t.is(json(t, unknown).error.type, 'not_found');
  },
);

test.serial(
  'svc stop-all on through the server, status with agents:read, off only --local; the console records',
  async (t) => {
    const bot = await makeBot(owner, 'ops-stop-all', PAY);
    const noReason = await remote(['stop-all', 'on'], tokens.freezer);
    t.is(noReason.code, 2, noReason.stdout);
    const readerOn = await remote(['stop-all', 'on', '--reason', 'x'], tokens.reader);
    t.is(json(t, readerOn).error.type, 'missing_scope');

    // Four live agents now, past the ceiling of 3: a token's "stop every agent" waits for a person.
    const live = (await owner.get('/agents?limit=200')).body.data.length as number;
    t.true(live > 3);
    const pending = await remote(['stop-all', 'on', '--reason', 'incident 8'], tokens.freezer);
    t.is(pending.code, 0, pending.stderr);
    t.like(json(t, pending), { status: 'pending', count: live });
    t.false(await frozen(server, bot), 'nothing stopped yet');
    const listed = await remote(['approvals', 'list'], tokens.approvals);
    t.is(listed.code, 0, listed.stderr);
    const waiting = json(t, listed).data.find((a: { id: string }) => a.id === json(t, pending).approvalId);
    t.like(waiting, { status: 'pending', freeze: { all: true, agentIds: [], requestedBy: 'token:ops-freeze' } });
    const fromStore = await local(['approvals', 'list']);
    t.deepEqual(
      json(t, fromStore).data.map((a: { id: string }) => a.id),
      json(t, listed).data.map((a: { id: string }) => a.id),
    );
    const wrongScope = await remote(['approvals', 'list'], tokens.reader);
    t.is(json(t, wrongScope).error.type, 'missing_scope');

    const on = await local(['stop-all', 'on', '--reason', 'incident 8']);
    t.is(on.code, 0, on.stderr);
    t.like(json(t, on), { stopped: true, reason: 'incident 8', by: 'operator:cli' });
    t.true(await frozen(server, bot));
    const status = await remote(['stop-all', 'status'], tokens.reader);
    t.like(json(t, status), { stopped: true, reason: 'incident 8', by: 'operator:cli' });

    const offByToken = await remote(['stop-all', 'off'], tokens.freezer);
    t.is(offByToken.code, 2);
    t.is(json(t, offByToken).error.type, 'local_only');
    t.true(await frozen(server, bot));
    const deleted = await call(server.url, 'DELETE', '/v1/admin/stop-all', { headers: bearer(tokens.freezer) });
    t.true([404, 405].includes(deleted.status), `no machine route lifts it: ${deleted.status}`);
    t.true(await frozen(server, bot));

    const off = await local(['stop-all', 'off']);
    t.is(off.code, 0, off.stderr);
    t.deepEqual(json(t, off), { stopped: false, reason: null, by: null, at: null });
    t.false(await frozen(server, bot));
    const records = (await about(owner, owner.wid)).filter((r) => r.kind.startsWith('workspace.stop_all'));
    t.deepEqual(
      records.slice(-2).map((r) => [r.kind, r.actor, r.data]),
      [
        ['workspace.stop_all', 'operator:cli', { reason: 'incident 8' }],
        ['workspace.stop_all_lifted', 'operator:cli', {}],
      ],
    );
  },
);

test.serial(
  'svc stop-all on by a token under the ceiling stops every agent at once, named in the ledger',
  async (t) => {
    const few = await startServer({ env: { ...SERVER_ENV } });
    try {
      const boss = await ownerConsole(few);
      const bot = await makeBot(boss, 'few-1', PAY);
      const token = await withStore(
        few.dataDir,
        async (app) =>
          (
            await app.services.serviceTokens.create(boss.wid, {
              name: 'few',
              scopes: ['agents:freeze'],
              expiresInDays: 1,
            })
          ).token,
      );
      const on = await svc(['stop-all', 'on', '--reason', 'now', '--url', few.url, '--json'], {
        env: { SVC_TOKEN: token },
      });
      t.is(on.code, 0, on.stderr);
      t.like(json(t, on), { stopped: true, reason: 'now', by: 'token:few' });
      t.true(await frozen(few, bot));
      t.like(
        (await boss.ledger()).find((r) => r.kind === 'workspace.stop_all'),
        { actor: 'token:few' },
      );
    } finally {
      await stopAndClean(few);
    }
  },
);

test.serial(
  'svc tokens create|list|revoke: --local only; the token works at once, its value is never listed, revoked it is refused',
  async (t) => {
    const refused = await remote(['tokens', 'list'], tokens.freezer);
    t.is(refused.code, 2);
    t.is(json(t, refused).error.type, 'local_only');
    const bad = await local([
      'tokens',
      'create',
      '--name',
      'two words',
      '--scope',
      'agents:read',
      '--expires-in-days',
      '7',
    ]);
    t.is(bad.code, 2, bad.stdout);
    const tooLong = await local([
      'tokens',
      'create',
      '--name',
      'ci',
      '--scope',
      'agents:read',
      '--expires-in-days',
      '91',
    ]);
    t.is(tooLong.code, 2, tooLong.stdout);

    const created = await local([
      'tokens',
      'create',
      '--name',
      'ci-list',
      '--scope',
      'agents:read',
      '--scope',
      'approvals:read',
      '--expires-in-days',
      '7',
      '--ip-allow',
      '127.0.0.0/8',
    ]);
    t.is(created.code, 0, created.stderr);
    const token = json(t, created);
    t.regex(token.token, /^ims_[A-Za-z0-9_-]{43}$/);
    t.like(token, { name: 'ci-list', scopes: ['agents:read', 'approvals:read'], ipAllow: ['127.0.0.0/8'] });
    t.is(token.hash, undefined);
    t.is((await remote(['agents', 'list'], token.token)).code, 0, 'the new token works at once');

    const listed = await local(['tokens', 'list']);
    t.false(listed.stdout.includes(token.token), 'the value is shown once, never listed');
    t.like(
      json(t, listed).data.find((x: { id: string }) => x.id === token.id),
      { name: 'ci-list', revokedAt: null },
    );
    const revoked = await local(['tokens', 'revoke', token.id]);
    t.is(revoked.code, 0, revoked.stderr);
    const after = await remote(['agents', 'list'], token.token);
    t.is(after.code, 1);
    t.is(json(t, after).error.type, 'invalid_token');
    const twice = await local(['tokens', 'revoke', token.id]);
    t.is(twice.code, 1, 'revoking twice: refused');
    t.regex(json(t, twice).error.message, new RegExp(`^Service token ${token.id} is already revoked \\(since `));
    const kinds = (await about(owner, token.id)).map((r) => [r.kind, r.actor]);
    t.deepEqual(kinds, [
      ['service_token.created', 'operator:cli'],
      ['service_token.revoked', 'operator:cli'],
    ]);
  },
);

test.serial(
  'svc keys list|revoke: through the server with SVC_ADMIN_KEY, and --local; a revoked key is refused at once',
  async (t) => {
    const minted = await local(['keys', 'create', '--scope', 'admin', '--name', 'ops-admin']);
    t.is(minted.code, 0, minted.stderr);
    const admin = json(t, minted).key as string;
    const bot = await makeBot(owner, 'ops-keys', PAY);

    const viaServer = await remote(['keys', 'list'], admin, 'SVC_ADMIN_KEY');
    t.is(viaServer.code, 0, viaServer.stderr);
    const viaStore = await local(['keys', 'list']);
    const ids = (res: CliResult) => json(t, res).data.map((k: { id: string }) => k.id);
    t.deepEqual(ids(viaServer), ids(viaStore));
    t.false(viaServer.stdout.includes(admin), 'no key value is listed');
    const agentKey = json(t, viaStore).data.find((k: { agentId: string | null }) => k.agentId === bot.agentId);
    t.truthy(agentKey);
    t.is((await remote(['keys', 'list'], tokens.reader, 'SVC_ADMIN_KEY')).code, 1, 'a service token is no admin key');
    t.is((await remote(['keys', 'list'], '', 'SVC_ADMIN_KEY')).code, 2, 'no credential: usage');

    const revoked = await remote(['keys', 'revoke', agentKey.id], admin, 'SVC_ADMIN_KEY');
    t.is(revoked.code, 0, revoked.stderr);
    const refused = await authorize(server, bot.key, pay(100, 'ops'));
    t.is(refused.status, 401, refused.text);
    const [record] = (await about(owner, agentKey.id)).filter((r) => r.kind === 'key.revoked');
    t.truthy(record);

    const adminId = json(t, minted).id as string;
    t.is((await local(['keys', 'revoke', adminId])).code, 0);
    t.is((await remote(['keys', 'list'], admin, 'SVC_ADMIN_KEY')).code, 1, 'the revoked admin key is refused');
    const twice = await local(['keys', 'revoke', adminId]);
    t.is(twice.code, 1, 'revoking twice: refused');
    t.regex(json(t, twice).error.message, new RegExp(`^Key ${adminId} is already revoked \\(since `));
    t.regex(json(t, twice).error.fix, /stays revoked/);
  },
);

test.serial(
  'svc freeze --selector through the server without --confirm-count: exit 1 with the count it matches now',
  async (t) => {
    const a = await makeBot(owner, 'ops-count-a', PAY);
    const b = await makeBot(owner, 'ops-count-b', PAY);
    for (const bot of [a, b])
      t.is((await owner.send('PATCH', `/agents/${bot.agentId}`, { tags: ['ops-count'] })).status, 200);
    const res = await remote(['freeze', '--selector', 'tag=ops-count', '--reason', 'x'], tokens.freezer);
    t.is(res.code, 1, res.stdout);
    t.like(json(t, res).error, { type: 'confirm_count_required', count: 2 });
    const fromStore = await local(['freeze', '--selector', 'tag=ops-count', '--reason', 'x']);
    t.like(json(t, fromStore).error, { type: 'confirm_count_required', count: 2 });
    t.false(await frozen(server, a), 'nothing frozen');
    const done = await local(['freeze', '--selector', 'tag=ops-count', '--reason', 'x', '--confirm-count', '2']);
    t.like(json(t, done), { frozen: 2, hold: 'owner' });
    t.true(await frozen(server, b));
  },
);
