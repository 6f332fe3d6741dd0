import { copyFile, cp, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { CURRENT_SCHEMA_VERSION, migrateStore, openStore, type Store } from '../../src/store/index.js';
import { migrations } from '../../src/store/migrations/index.js';

/** Every migration after schema 1, in order: what a schema-1 store must go through. */
const AFTER_V1 = migrations.filter((m) => m.version > 1).map((m) => m.version);
import { call, csrf, type Json } from '../helpers/http.js';
import { removeDir, startServer, svc, tempDir, type RunningServer } from '../helpers/process.js';

/**
 * `svc init` (scripted bootstrap) and `svc migrate` over a store of the previous schema version,
 * through the real binary. Exit codes: 0 ok, 2 usage, 3 cannot open the store.
 */

const dirs: string[] = [];
const servers: RunningServer[] = [];

async function dir(prefix: string): Promise<string> {
  const d = await tempDir(prefix);
  dirs.push(d);
  return d;
}

test.after.always(async () => {
  for (const s of servers) await s.stop();
  for (const d of dirs) await removeDir(d);
});

/** Opens a store in this process for the length of fn (nothing else holds it open). */
async function withRawStore<T>(dataDir: string, fn: (store: Store) => Promise<T> | T): Promise<T> {
  const store = await openStore(dataDir);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

const V1 = {
  wid: 'ws_V1WorkspaceAAAAAAAAAAAA',
  uid: 'usr_V1OwnerAAAAAAAAAAAAAAA',
  email: 'old-owner@acme.example',
  password: 'an old but fine password',
  at: '2025-01-02T03:04:05.000Z',
};

const FIXTURE = fileURLToPath(new URL('../fixtures/store-v1/svc.mdb', import.meta.url));

/**
 * A store of schema 1, as the previous release wrote it (no userWorkspaces index): a copy of the
 * checked-in fixture (see test/fixtures/make-store-v1.ts), so these tests read real bytes of the
 * previous format rather than bytes today's code would write.
 */
async function buildV1Store(dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  await copyFile(FIXTURE, join(dataDir, 'svc.mdb'));
  // A store always had its master key beside it; the first opening by this svc records its check value.
  await copyFile(join(dirname(FIXTURE), 'master.key'), join(dataDir, 'master.key'));
}

function json(stdout: string): Json {
  return JSON.parse(stdout);
}

test('svc --help exits 0 and lists serve, init and migrate', async (t) => {
  const res = await svc(['--help']);
  t.is(res.code, 0, res.stderr);
  for (const command of ['serve', 'init', 'migrate'])
    t.regex(res.stdout, new RegExp(`^\\s+${command}\\s`, 'm'), command);
});

test('init with the password on stdin prints exactly one JSON document and exits 0; a second init exits 2', async (t) => {
  const d = await dir('svc-init-');
  const args = [
    'init',
    '--data-dir',
    d,
    '--workspace',
    'Acme',
    '--owner-email',
    'ops@acme.example',
    '--owner-password-stdin',
    '--json',
  ];
  const res = await svc(args, { input: 'correct horse battery staple\n' });
  t.is(res.code, 0, res.stderr);
  const doc = json(res.stdout);
  t.deepEqual(Object.keys(doc).sort(), ['ownerId', 'workspaceId']);
  t.regex(doc.workspaceId, /^ws_[0-9A-Za-z]{22}$/);
  t.regex(doc.ownerId, /^usr_[0-9A-Za-z]{22}$/);

  const again = await svc(args, { input: 'another long password!!\n' });
  t.is(again.code, 2, again.stdout + again.stderr);
  t.is(json(again.stdout).error.exitCode, 2);

  // The owner set up by init signs in with the password from stdin (without its newline).
  const server = await startServer({ dataDir: d });
  servers.push(server);
  t.is(server.boot.owner, undefined, 'an initialised store gets no second bootstrap owner');
  const signIn = await call(server.url, 'POST', '/api/session', {
    headers: csrf,
    json: { email: 'ops@acme.example', password: 'correct horse battery staple' },
  });
  t.is(signIn.status, 200, signIn.text);
  t.deepEqual(signIn.body.workspaces, [{ id: doc.workspaceId, name: 'Acme', role: 'owner' }]);
  t.is(signIn.body.user.id, doc.ownerId);
});

test('init with a short password exits 2 and creates no workspace', async (t) => {
  const d = await dir('svc-init-short-');
  const res = await svc(
    [
      'init',
      '--data-dir',
      d,
      '--workspace',
      'Acme',
      '--owner-email',
      'ops@acme.example',
      '--owner-password-stdin',
      '--json',
    ],
    { input: 'short\n' },
  );
  t.is(res.code, 2, res.stdout + res.stderr);
  t.regex(json(res.stdout).error.message, /12 characters/);
  // Still empty: a later init succeeds.
  const ok = await svc([
    'init',
    '--data-dir',
    d,
    '--workspace',
    'Acme',
    '--owner-email',
    'ops@acme.example',
    '--owner-password',
    'long enough password',
    '--json',
  ]);
  t.is(ok.code, 0, ok.stderr);
});

test('an unknown flag exits 2 and names the flag', async (t) => {
  const plain = await svc(['init', '--bogus']);
  t.is(plain.code, 2);
  t.regex(plain.stderr, /Nonexistent flag: --bogus/);
  t.is(plain.stdout, '');

  const res = await svc(['init', '--bogus', '--json']);
  t.is(res.code, 2);
  t.regex(json(res.stdout).error.message, /--bogus/);
});

test('init with both password flags, or neither, is a usage error: exit 2', async (t) => {
  const d = await dir('svc-init-flags-');
  const base = ['init', '--data-dir', d, '--workspace', 'Acme', '--owner-email', 'ops@acme.example'];
  const both = await svc([...base, '--owner-password', 'long enough password', '--owner-password-stdin'], {
    input: 'long enough password\n',
  });
  t.is(both.code, 2, both.stderr);
  const neither = await svc(base);
  t.is(neither.code, 2, neither.stderr);
  t.regex(neither.stderr, /owner-password/);
});

test('an unknown command is a usage error: exit 2', async (t) => {
  const res = await svc(['no-such-command']);
  t.is(res.code, 2, res.stderr);
  t.regex(res.stderr, /no-such-command/);
});

test('under --json a usage error is the CLI error envelope, not the parser internals', async (t) => {
  const res = await svc(['init', '--bogus', '--json']);
  t.is(res.code, 2);
  const doc = json(res.stdout);
  t.deepEqual(Object.keys(doc), ['error']);
  // The envelope every other CLI failure uses (src/cli/base-command.ts): type, message, fix?, exitCode.
  t.is(typeof doc.error.type, 'string');
  t.is(doc.error.exitCode, 2);
  t.deepEqual(
    Object.keys(doc.error).filter((k) => !['type', 'message', 'fix', 'exitCode'].includes(k)),
    [],
  );
});

test('a flag given without its value is a usage error: exit 2, the envelope under --json', async (t) => {
  for (const args of [
    ['serve', '--port', '--json'],
    ['serve', '--json', '--port'],
  ]) {
    const res = await svc(args);
    t.is(res.code, 2, args.join(' '));
    const doc = json(res.stdout);
    t.is(doc.error.type, 'usage');
    t.is(doc.error.exitCode, 2);
    t.regex(String(doc.error.message), /--port expects a value/);
  }
});

test('serve refuses a schema-1 store with exit 3 and tells to run svc migrate', async (t) => {
  const d = await dir('svc-v1-serve-');
  await buildV1Store(d);
  const res = await svc(['serve', '--data-dir', d, '--host', '127.0.0.1', '--port', '0']);
  t.is(res.code, 3, res.stdout + res.stderr);
  t.regex(res.stderr, /svc migrate/);
  t.regex(res.stderr, /schema version 1/);
  t.is(await withRawStore(d, (s) => s.schemaVersion()), 1);
});

test('migrate: dry run changes nothing, then 1 -> 2, then a re-run applies nothing; no record is lost', async (t) => {
  const d = await dir('svc-v1-migrate-');
  await buildV1Store(d);

  const dry = await svc(['migrate', '--data-dir', d, '--dry-run', '--json']);
  t.is(dry.code, 0, dry.stderr);
  const dryDoc = json(dry.stdout);
  t.is(dryDoc.from, 1);
  t.is(dryDoc.to, CURRENT_SCHEMA_VERSION, 'names the version it would reach');
  t.true(dryDoc.dryRun);
  const dryText = await svc(['migrate', '--data-dir', d, '--dry-run']);
  t.regex(dryText.stdout, new RegExp(`^would migrate schema version 1 -> ${CURRENT_SCHEMA_VERSION}$`, 'm'));
  t.deepEqual(
    dryDoc.applied.map((m: { version: number }) => m.version),
    AFTER_V1,
  );
  await withRawStore(d, async (s) => {
    t.is(await s.schemaVersion(), 1);
    t.is(await s.tables.userWorkspaces.get([V1.uid, V1.wid]), undefined);
  });

  const run = await svc(['migrate', '--data-dir', d, '--json']);
  t.is(run.code, 0, run.stderr);
  const runDoc = json(run.stdout);
  t.like(runDoc, { from: 1, to: CURRENT_SCHEMA_VERSION, dryRun: false });
  t.deepEqual(
    runDoc.applied.map((m: { version: number }) => m.version),
    AFTER_V1,
  );
  t.is(typeof runDoc.applied[0].description, 'string');

  const again = await svc(['migrate', '--data-dir', d, '--json']);
  t.is(again.code, 0, again.stderr);
  t.like(json(again.stdout), { from: CURRENT_SCHEMA_VERSION, to: CURRENT_SCHEMA_VERSION, applied: [] });

  const plain = await svc(['migrate', '--data-dir', d]);
  t.is(plain.code, 0, plain.stderr);
  t.regex(plain.stdout, /up to date/);

  await withRawStore(d, async (s) => {
    t.is(await s.schemaVersion(), CURRENT_SCHEMA_VERSION);
    t.is(await s.tables.userWorkspaces.get([V1.uid, V1.wid]), 'owner');
    t.deepEqual(await s.tables.workspaces.get(V1.wid), { id: V1.wid, name: 'Acme v1', createdAt: V1.at });
    t.like(await s.tables.users.get(V1.uid), { id: V1.uid, email: V1.email, name: 'Old Owner' });
    t.is(await s.tables.usersByEmail.get(V1.email), V1.uid);
    t.deepEqual(await s.tables.members.get([V1.wid, V1.uid]), {
      workspaceId: V1.wid,
      userId: V1.uid,
      role: 'owner',
      addedAt: V1.at,
    });
    t.is((await s.tables.workspaces.scan([])).length, 1);
    t.is((await s.tables.users.scan([])).length, 1);
    t.is((await s.tables.members.scan([])).length, 1);
  });

  // The migrated store serves: the old owner signs in and sees the workspace through the new index.
  const server = await startServer({ dataDir: d });
  servers.push(server);
  t.is(server.boot.owner, undefined);
  const signIn = await call(server.url, 'POST', '/api/session', {
    headers: csrf,
    json: { email: V1.email, password: V1.password },
  });
  t.is(signIn.status, 200, signIn.text);
  t.deepEqual(signIn.body.workspaces, [{ id: V1.wid, name: 'Acme v1', role: 'owner' }]);
});

test('serve --migrate starts on a schema-1 store and migrates it', async (t) => {
  const source = await dir('svc-v1-src-');
  await buildV1Store(source);
  const copy = await dir('svc-v1-copy-');
  await cp(source, copy, { recursive: true });

  const server = await startServer({ dataDir: copy, args: ['--migrate'] });
  servers.push(server);
  t.is(server.boot.owner, undefined, 'a store with a workspace gets no bootstrap owner');
  const ready = await call(server.url, 'GET', '/readyz');
  t.deepEqual(ready.body, { status: 'ready', schemaVersion: CURRENT_SCHEMA_VERSION });
  const signIn = await call(server.url, 'POST', '/api/session', {
    headers: csrf,
    json: { email: V1.email, password: V1.password },
  });
  t.is(signIn.status, 200, signIn.text);
  t.deepEqual(signIn.body.workspaces, [{ id: V1.wid, name: 'Acme v1', role: 'owner' }]);
  t.regex(server.stderr(), /store migrated/);
  // The source copy is untouched.
  t.is(await withRawStore(source, (s) => s.schemaVersion()), 1);
});

test('a store with a newer schema (99): migrate and serve exit 3 saying it is newer', async (t) => {
  const d = await dir('svc-v99-');
  await withRawStore(d, async (store) => {
    await migrateStore(store);
    await store.write(() => store.tables.meta.put('schemaVersion', 99));
  });

  const migrate = await svc(['migrate', '--data-dir', d, '--json']);
  t.is(migrate.code, 3, migrate.stdout + migrate.stderr);
  t.regex(json(migrate.stdout).error.message, /newer/);

  const serve = await svc(['serve', '--data-dir', d, '--host', '127.0.0.1', '--port', '0']);
  t.is(serve.code, 3, serve.stdout + serve.stderr);
  t.regex(serve.stderr, /newer/);

  t.is(await withRawStore(d, (s) => s.schemaVersion()), 99, 'nothing rewrote the version');
});
