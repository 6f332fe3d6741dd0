import test, { type ExecutionContext } from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import { authorize } from '../helpers/gate.js';
import { assertError, bearer, call, type Json } from '../helpers/http.js';
import { stopAndClean, svc } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { makeBot, pay, SERVER_ENV } from '../approvals/support.js';

/**
 * The server caches authenticated keys in memory behind the `keys` generation counter (
 * rule 7, keys/service.ts). A key revoked, minted or an agent stopped by another process (the
 * spawned CLI, `--local`, on the server's store) is seen by the very next request, even when the
 * key has just been served from the cache. Serial: the CLI opens the server's store.
 */

let server: ServedInProcess;
let owner: Person;

const PAY = [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 }];

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
});

test.after.always(() => stopAndClean(server));

function local(args: string[]) {
  return svc([...args, '--local', '--data-dir', server.dataDir, '--json']);
}

function parse(t: ExecutionContext, stdout: string): Json {
  try {
    return JSON.parse(stdout);
  } catch {
    t.fail(`stdout is not one JSON document: ${stdout}`);
    return undefined;
  }
}

async function mint(t: ExecutionContext, scope: string, extra: string[] = []): Promise<{ id: string; key: string }> {
  const res = await local(['keys', 'create', '--scope', scope, '--name', `cache-${scope}`, ...extra]);
  t.is(res.code, 0, res.stderr);
  const body = parse(t, res.stdout);
  return { id: body.id, key: body.key };
}

test.serial(
  'a key minted by the CLI works on the next request; revoked by the CLI, the very next request is 401',
  async (t) => {
    const { id, key } = await mint(t, 'inference');
    // Twice: the second answer comes from the cache.
    for (let i = 0; i < 2; i += 1) {
      const res = await call(server.url, 'GET', '/v1/whoami', { headers: bearer(key) });
      t.is(res.status, 200);
      t.is(res.body.id, id);
      t.is(res.body.revokedAt, null);
    }

    const revoked = await local(['keys', 'revoke', id]);
    t.is(revoked.code, 0, revoked.stderr);

    assertError(t, await call(server.url, 'GET', '/v1/whoami', { headers: bearer(key) }), 401, 'invalid_api_key');
    // A key of another process's mint, after the revoke: still known (the cache was refilled, not emptied for good).
    const other = await mint(t, 'admin');
    const res = await call(server.url, 'GET', '/v1/admin/keys', { headers: bearer(other.key) });
    t.is(res.status, 200);
    t.true(
      (res.body.data as Array<{ id: string; revokedAt: string | null }>).some(
        (k) => k.id === id && k.revokedAt !== null,
      ),
    );
  },
);

test.serial(
  'an admin key revoked by the CLI is refused on the very next admin request (403 would be wrong, 401 is right)',
  async (t) => {
    const admin = await mint(t, 'admin');
    t.is((await call(server.url, 'GET', '/v1/admin/keys', { headers: bearer(admin.key) })).status, 200);
    t.is((await call(server.url, 'GET', '/v1/admin/keys', { headers: bearer(admin.key) })).status, 200);
    const revoked = await local(['keys', 'revoke', admin.id]);
    t.is(revoked.code, 0, revoked.stderr);
    assertError(
      t,
      await call(server.url, 'GET', '/v1/admin/keys', { headers: bearer(admin.key) }),
      401,
      'invalid_api_key',
    );
  },
);

test.serial(
  'an agent key cached with its agent: the CLI stops the agent, the very next authorize is deny agent_frozen; a revoked agent key is 401',
  async (t) => {
    const bot = await makeBot(owner, 'cache-bot', PAY);
    for (let i = 0; i < 2; i += 1) {
      const res = await authorize(server, bot.key, pay(100, `cache ${i}`));
      t.is(res.status, 200, res.text);
      t.is(res.body.decision, 'allow');
    }

    const stopped = await local(['agents', 'stop', bot.agentId, '--reason', 'cache test']);
    t.is(stopped.code, 0, stopped.stderr);
    const denied = await authorize(server, bot.key, pay(100, 'after stop'));
    t.is(denied.status, 200, denied.text);
    t.is(denied.body.decision, 'deny');
    t.true(
      (denied.body.signals as string[]).some((s) => s.startsWith('agent_')),
      JSON.stringify(denied.body.signals),
    );

    const keyId = (await call(server.url, 'GET', '/v1/whoami', { headers: bearer(bot.key) })).body.id as string;
    const revoked = await local(['keys', 'revoke', keyId]);
    t.is(revoked.code, 0, revoked.stderr);
    assertError(t, await authorize(server, bot.key, pay(100, 'after revoke')), 401, 'invalid_api_key');
  },
);
