import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readFile, readdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { CURRENT_SCHEMA_VERSION, openStore } from '../../src/store/index.js';
import { call, csrf } from '../helpers/http.js';
import { removeDir, ROOT, startServer, stopAndClean, svc, tempDir } from '../helpers/process.js';
import { codeBlocks } from './markdown.js';

/**
 * docs/operations.md, "Upgrading": its two shell blocks (back up, dry run, migrate; roll back) run
 * as written, line by line, on a store of schema 1 as the release that introduced it wrote it
 * (test/fixtures/store-v1/, made by test/fixtures/make-store-v1.ts), with a temp folder in place
 * of /var/lib/svc and /var/backups/svc; between the steps, what each is said to do is checked.
 */

const FIXTURE = fileURLToPath(new URL('../fixtures/store-v1/svc.mdb', import.meta.url));
const V1 = {
  wid: 'ws_V1WorkspaceAAAAAAAAAAAA',
  uid: 'usr_V1OwnerAAAAAAAAAAAAAAA',
  email: 'old-owner@acme.example',
  password: 'an old but fine password',
};

/** The page's shell blocks under "## Upgrading", each as its command lines (comments and blanks left out). */
async function upgradingBlocks(): Promise<string[][]> {
  const page = await readFile(join(ROOT, 'docs', 'operations.md'), 'utf8');
  const start = page.indexOf('\n## Upgrading\n');
  const end = page.indexOf('\n## ', start + 1);
  const section = page.slice(start, end === -1 ? undefined : end);
  return codeBlocks(section, 'sh').map((block) =>
    block
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#')),
  );
}

/** What a store holds that schema 1 had, read without writing anything (not even a lock file). */
async function records(dataDir: string) {
  const store = await openStore(dataDir, { create: false, readOnly: true });
  try {
    const t = store.tables;
    return {
      schemaVersion: await store.schemaVersion(),
      workspace: await t.workspaces.get(V1.wid),
      user: await t.users.get(V1.uid),
      byEmail: await t.usersByEmail.get(V1.email),
      member: await t.members.get([V1.wid, V1.uid]),
    };
  } finally {
    await store.close();
  }
}

const sha256 = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

test('the Upgrading steps of operations.md run as written: back up, dry run, migrate, roll back to the old version', async (t) => {
  const blocks = await upgradingBlocks();
  t.is(blocks.length, 2, 'the upgrade, then the roll back');
  const [upgrade, rollBack] = blocks as [string[], string[]];

  const base = await tempDir('svc-upgrade-');
  const dataDir = join(base, 'lib');
  const backups = join(base, 'backups');
  const pristine = join(base, 'pristine');
  const local = (line: string) => line.replaceAll('/var/lib/svc', dataDir).replaceAll('/var/backups/svc', backups);
  /** One line of a block, as an operator's shell runs it: `svc` is this checkout's, the rest is sh. */
  const run = async (line: string) => {
    const words = local(line).split(/\s+/);
    if (words[0] === 'svc') return svc(words.slice(1));
    const res = spawnSync('sh', ['-c', local(line)], { encoding: 'utf8' });
    return { code: res.status, stdout: res.stdout, stderr: res.stderr };
  };
  try {
    // The store the previous release left: schema 1, with its master key beside it.
    for (const d of [dataDir, backups, pristine]) await mkdir(d, { recursive: true });
    for (const d of [dataDir, pristine]) {
      await copyFile(FIXTURE, join(d, 'svc.mdb'));
      await copyFile(join(dirname(FIXTURE), 'master.key'), join(d, 'master.key'));
    }
    const before = await records(pristine);
    t.is(before.schemaVersion, 1);
    t.like(before.workspace, { id: V1.wid, name: 'Acme v1' });

    // 1. Back up, with the master key.
    t.regex(upgrade[0]!, /^svc backup --data-dir \/var\/lib\/svc --out /);
    const backup = await run(upgrade[0]!);
    t.is(backup.code, 0, backup.stderr);
    t.regex(backup.stdout, /store \(schema 1\) copied to/);
    const backupFile = local(upgrade[0]!).split(' --out ')[1]!;
    t.is((await stat(backupFile)).mode & 0o777, 0o600, 'the copy is private');
    t.regex(upgrade[1]!, /^cp \/var\/lib\/svc\/master\.key /);
    t.is((await run(upgrade[1]!)).code, 0);

    // 2. The dry run names the versions and changes nothing in the data dir.
    t.is(upgrade[2], 'svc migrate --data-dir /var/lib/svc --dry-run');
    const files = await readdir(dataDir);
    const bytes = await sha256(join(dataDir, 'svc.mdb'));
    const dry = await run(upgrade[2]!);
    t.is(dry.code, 0, dry.stderr);
    t.regex(dry.stdout, new RegExp(`^would migrate schema version 1 -> ${CURRENT_SCHEMA_VERSION}$`, 'm'));
    t.deepEqual(await readdir(dataDir), files, 'no file made, not even the lock file');
    t.is(await sha256(join(dataDir, 'svc.mdb')), bytes, 'the store unchanged');

    // 3. Migrate; the new version serves the store, and its old owner signs in.
    t.is(upgrade[3], 'svc migrate --data-dir /var/lib/svc');
    t.is(upgrade.length, 4);
    const migrated = await run(upgrade[3]!);
    t.is(migrated.code, 0, migrated.stderr);
    t.regex(migrated.stdout, new RegExp(`^migrated schema version 1 -> ${CURRENT_SCHEMA_VERSION}$`, 'm'));
    t.is((await records(dataDir)).schemaVersion, CURRENT_SCHEMA_VERSION);
    const server = await startServer({ dataDir });
    try {
      const signIn = await call(server.url, 'POST', '/api/session', {
        headers: csrf,
        json: { email: V1.email, password: V1.password },
      });
      t.is(signIn.status, 200, signIn.text);
      t.like(signIn.body.workspaces[0], { id: V1.wid, name: 'Acme v1', role: 'owner' });
    } finally {
      await server.stop();
    }

    // Roll back: the backup in place of the migrated store, which is kept aside.
    t.is(rollBack.length, 4);
    for (const line of rollBack.slice(0, 3)) {
      const res = await run(line);
      t.is(res.code, 0, `${line}: ${res.stderr}`);
    }
    t.is((await records(join(dataDir))).schemaVersion, 1);
    const aside = join(base, 'aside');
    await mkdir(aside);
    await copyFile(join(dataDir, 'svc.mdb.migrated'), join(aside, 'svc.mdb'));
    t.is((await records(aside)).schemaVersion, CURRENT_SCHEMA_VERSION, 'the migrated store is kept');

    // The old version's store again: schema 1, the same records as before the upgrade, and the
    // dry run of the last line says so (from 1, the migrations still to run).
    t.deepEqual(await records(dataDir), before);
    t.is(rollBack[3], 'svc migrate --data-dir /var/lib/svc --dry-run --json');
    const check = await run(rollBack[3]!);
    t.is(check.code, 0, check.stderr);
    t.like(JSON.parse(check.stdout), { from: 1, to: CURRENT_SCHEMA_VERSION, dryRun: true });
    // What today's svc says of it is what it said before the upgrade: an older store, to migrate.
    const serve = await svc(['serve', '--data-dir', dataDir, '--port', '0', '--json']);
    t.is(serve.code, 3, serve.stdout + serve.stderr);
    t.is(JSON.parse(serve.stdout).error.type, 'store_older_schema');
  } finally {
    await removeDir(base);
  }
});

test('the roll back stays possible: the migrated store does not open in a version older than itself', async (t) => {
  // What "the way back is the backup" rests on: a store newer than the running svc is refused, exit 3.
  const server = await startServer();
  const dataDir = server.dataDir;
  await server.stop();
  try {
    const store = await openStore(dataDir);
    await store.write(() => store.tables.meta.put('schemaVersion', CURRENT_SCHEMA_VERSION + 1));
    await store.close();
    const serve = await svc(['serve', '--data-dir', dataDir, '--port', '0', '--json']);
    t.is(serve.code, 3, serve.stdout + serve.stderr);
    t.is(JSON.parse(serve.stdout).error.type, 'store_newer_schema');
  } finally {
    await stopAndClean(server);
  }
});
