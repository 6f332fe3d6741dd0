import test from 'ava';
import { bearer, call, type Json } from '../helpers/http.js';
import { svc, type CliResult, stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * `svc keys create`: on the store directly (--local, the operator's root of trust) or through a
 * running server with an admin key. Exit codes: 1 refused, 2 usage, 3 cannot reach the server.
 */

const KEY = /^ask_[A-Za-z0-9_-]{43}$/;

let server: ServedInProcess;
let adminKey: string;
let localMinted: Json;

/** Parses --json output, failing the test when stdout holds anything but one JSON document. */
function onlyJson(res: CliResult): Json {
  return JSON.parse(res.stdout);
}

test.before(async () => {
  server = await serveInProcess();
  const res = await svc(['keys', 'create', '--scope', 'admin', '--local', '--data-dir', server.dataDir, '--json']);
  if (res.code !== 0) throw new Error(`keys create --local failed: ${res.code}\n${res.stdout}\n${res.stderr}`);
  localMinted = onlyJson(res);
  adminKey = localMinted.key;
});

test.after.always(() => stopAndClean(server));

test('--local mints an admin key on the store: {id, key, scope}, and it works against the running server', async (t) => {
  t.regex(localMinted.key, KEY);
  t.regex(localMinted.id, /^key_[0-9A-Za-z]{22}$/);
  t.is(localMinted.scope, 'admin');
  t.is(localMinted.workspaceId, server.boot.workspaceId);
  const who = await call(server.url, 'GET', '/v1/whoami', { headers: bearer(localMinted.key) });
  t.is(who.status, 200, who.text);
  t.is(who.body.id, localMinted.id);
  t.is(who.body.scope, 'admin');
  t.is(who.body.workspaceId, server.boot.workspaceId);
  t.false('key' in who.body, 'the key value is shown once, at minting');
});

test('through the server with SVC_ADMIN_KEY: an inference key bound to a principal and team', async (t) => {
  const res = await svc(
    ['keys', 'create', '--scope', 'inference', '--principal', 'alice', '--team', 'search', '--json'],
    {
      env: { SVC_ADMIN_KEY: adminKey, SVC_URL: server.url },
    },
  );
  t.is(res.code, 0, res.stdout + res.stderr);
  const minted = onlyJson(res);
  t.regex(minted.key, KEY);
  t.regex(minted.id, /^key_[0-9A-Za-z]{22}$/);
  t.like(minted, { scope: 'inference', principal: 'alice', team: 'search', workspaceId: server.boot.workspaceId });
  t.not(minted.key, adminKey);

  const who = await call(server.url, 'GET', '/v1/whoami', { headers: bearer(minted.key) });
  t.is(who.status, 200, who.text);
  t.like(who.body, { id: minted.id, scope: 'inference', principal: 'alice', team: 'search' });
});

test('without --json the key is printed once on stdout, and the note goes to stderr', async (t) => {
  const res = await svc(['keys', 'create', '--scope', 'inference', '--name', 'plain', '--url', server.url], {
    env: { SVC_ADMIN_KEY: adminKey },
  });
  t.is(res.code, 0, res.stderr);
  const lines = res.stdout.split('\n').filter(Boolean);
  t.is(lines.length, 1);
  t.regex(lines[0]!, KEY);
  t.false(res.stderr.includes(lines[0]!), 'the value is not repeated on stderr');
  const who = await call(server.url, 'GET', '/v1/whoami', { headers: bearer(lines[0]!) });
  t.is(who.status, 200);
  t.is(who.body.name, 'plain');
});

test('an inference key as SVC_ADMIN_KEY is refused: exit 1 and the error type forbidden', async (t) => {
  const inference = onlyJson(
    await svc(['keys', 'create', '--scope', 'inference', '--json'], {
      env: { SVC_ADMIN_KEY: adminKey, SVC_URL: server.url },
    }),
  );
  const res = await svc(['keys', 'create', '--scope', 'inference', '--json'], {
    env: { SVC_ADMIN_KEY: inference.key, SVC_URL: server.url },
  });
  t.is(res.code, 1, res.stdout + res.stderr);
  const doc = onlyJson(res);
  t.is(doc.error.type, 'forbidden');
  t.is(doc.error.exitCode, 1);
  t.is(typeof doc.error.message, 'string');
});

test('no admin key and no --local: exit 2, nothing minted', async (t) => {
  const res = await svc(['keys', 'create', '--scope', 'inference', '--json'], { env: { SVC_URL: server.url } });
  t.is(res.code, 2, res.stdout + res.stderr);
  const doc = onlyJson(res);
  t.is(doc.error.exitCode, 2);
  t.regex(doc.error.message, /SVC_ADMIN_KEY/);
});

test('--url naming a closed port: exit 3', async (t) => {
  const res = await svc(['keys', 'create', '--scope', 'inference', '--url', 'http://127.0.0.1:1', '--json'], {
    env: { SVC_ADMIN_KEY: adminKey },
  });
  t.is(res.code, 3, res.stdout + res.stderr);
  const doc = onlyJson(res);
  t.is(doc.error.type, 'unreachable');
  t.is(doc.error.exitCode, 3);
});

test('--scope agent without --agent: exit 2, locally and through the server', async (t) => {
  const local = await svc(['keys', 'create', '--scope', 'agent', '--local', '--data-dir', server.dataDir, '--json']);
  t.is(local.code, 2, local.stdout + local.stderr);
  t.regex(onlyJson(local).error.message, /agentId/);
  const remote = await svc(['keys', 'create', '--scope', 'agent', '--json'], {
    env: { SVC_ADMIN_KEY: adminKey, SVC_URL: server.url },
  });
  t.is(remote.code, 2, remote.stdout + remote.stderr);
});

test('an unknown --scope value is a usage error: exit 2', async (t) => {
  const res = await svc(['keys', 'create', '--scope', 'root', '--local', '--data-dir', server.dataDir]);
  t.is(res.code, 2, res.stdout + res.stderr);
  t.regex(res.stderr, /--scope=root/);
});

test('a missing --scope is a usage error: exit 2', async (t) => {
  const res = await svc(['keys', 'create', '--local', '--data-dir', server.dataDir]);
  t.is(res.code, 2, res.stdout + res.stderr);
  t.regex(res.stderr, /scope/);
});

test('--json prints one JSON document and nothing else on stdout; the key appears once', async (t) => {
  const res = await svc(['keys', 'create', '--scope', 'inference', '--local', '--data-dir', server.dataDir, '--json']);
  t.is(res.code, 0, res.stderr);
  const doc = onlyJson(res);
  t.is(res.stdout.trim().startsWith('{'), true);
  t.is(res.stdout.trim().endsWith('}'), true);
  t.is(res.stdout.split(doc.key).length, 2, 'the key value appears exactly once in stdout');
  t.false(res.stderr.includes(doc.key), 'the key value never reaches stderr');
});
