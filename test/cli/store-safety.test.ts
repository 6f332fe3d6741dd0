import { spawn } from 'node:child_process';
import { chmod, chown, cp, mkdir, readdir, readFile, rename, stat, truncate, writeFile, open } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import test from 'ava';
import { openStore } from '../../src/store/index.js';
import { assertError, bearer, call, type Json } from '../helpers/http.js';
import {
  BIN,
  cleanEnv,
  initArgs,
  removeDir,
  ROOT,
  startServer,
  svc,
  tempDir,
  type CliResult,
} from '../helpers/process.js';
import { fillDisk, mountSmallDisk } from '../helpers/small-disk.js';

/**
 * Issue 18, items 2 to 5, through the spawned `svc`: a store is opened only with its own master key
 * (a missing or different one is exit 3, and no key is ever made over an existing store); a damaged
 * store file is exit 3 "store file damaged: restore from backup", never a signal; only serve and
 * init create a store; read-only commands work on a read-only copy; the system's refusals are the
 * catalogue's errors with exit 3.
 */

const dirs: string[] = [];
test.after.always(async () => {
  for (const d of dirs) await removeDir(d);
});

/** svc, with room for the shared, loaded machines these run on (tests in this file run one at a time). */
const run = (args: string[], options: Parameters<typeof svc>[1] = {}) => svc(args, { timeoutMs: 120_000, ...options });

/** A data dir set up by `svc init` (store, master key, signing keys, one workspace). */
async function initialised(): Promise<{ base: string; dataDir: string }> {
  const base = await tempDir();
  dirs.push(base);
  const dataDir = join(base, 'data');
  const res = await run(initArgs(dataDir));
  if (res.code !== 0) throw new Error(`init failed: ${res.stderr}`);
  return { base, dataDir };
}

function errorOf(res: CliResult): { type: string; message: string; fix: string; exitCode: number } {
  return (JSON.parse(res.stdout) as Json).error;
}

const newKey = () => randomBytes(32).toString('base64url');

test.serial(
  'a missing master key: every command, serve too, exits 3 naming master.key, and no key is made',
  async (t) => {
    const { base, dataDir } = await initialised();
    await rename(join(dataDir, 'master.key'), join(base, 'saved.key'));
    for (const args of [
      ['agents', 'list', '--local'],
      ['ledger', 'verify'],
      ['serve', '--host', '127.0.0.1', '--port', '0'],
    ]) {
      const res = await run([...args, '--data-dir', dataDir, '--json']);
      t.is(res.code, 3, `${args.join(' ')}: ${res.stderr}`);
      const error = errorOf(res);
      t.is(error.type, 'master_key_missing', args.join(' '));
      t.true(error.message.includes(join(dataDir, 'master.key')), error.message);
      t.regex(error.fix, /backup's master\.key/);
    }
    t.deepEqual((await readdir(dataDir)).sort(), ['svc.mdb', 'svc.mdb-lock'], 'no new master.key, no temporary file');

    // SVC_MASTER_KEY_FILE names the saved key (a mounted secret): the store opens.
    const fromFile = await run(['agents', 'list', '--local', '--data-dir', dataDir, '--json'], {
      env: { SVC_MASTER_KEY_FILE: join(base, 'saved.key') },
    });
    t.is(fromFile.code, 0, fromFile.stderr);
    t.deepEqual(JSON.parse(fromFile.stdout), { data: [] });
    // A file that is not there is named.
    const absent = await run(['agents', 'list', '--local', '--data-dir', dataDir, '--json'], {
      env: { SVC_MASTER_KEY_FILE: join(base, 'absent.key') },
    });
    t.is(absent.code, 3);
    t.is(errorOf(absent).type, 'master_key_missing');
    t.true(errorOf(absent).message.includes(join(base, 'absent.key')));
    // Both forms at once is a configuration error.
    const both = await run(['agents', 'list', '--local', '--data-dir', dataDir, '--json'], {
      env: { SVC_MASTER_KEY_FILE: join(base, 'saved.key'), SVC_MASTER_KEY: newKey() },
    });
    t.is(both.code, 2);
  },
);

test.serial(
  'a different master key (another backup, another SVC_MASTER_KEY): exit 3 master_key_mismatch, nothing changed',
  async (t) => {
    const { dataDir } = await initialised();
    const before = await readFile(join(dataDir, 'svc.mdb'));
    await writeFile(join(dataDir, 'master.key'), newKey());
    for (const args of [
      ['serve', '--host', '127.0.0.1', '--port', '0'],
      ['ledger', 'verify'],
      ['keys', 'create', '--scope', 'admin', '--local'],
    ]) {
      const res = await run([...args, '--data-dir', dataDir, '--json']);
      t.is(res.code, 3, `${args.join(' ')}: ${res.stderr}`);
      t.is(errorOf(res).type, 'master_key_mismatch', args.join(' '));
      t.regex(errorOf(res).fix, /backup's master\.key/);
    }
    const env = await run(['agents', 'list', '--local', '--data-dir', dataDir, '--json'], {
      env: { SVC_MASTER_KEY: newKey() },
    });
    t.is(env.code, 3);
    t.is(errorOf(env).type, 'master_key_mismatch');
    t.regex(errorOf(env).message, /SVC_MASTER_KEY/);
    t.true(before.equals(await readFile(join(dataDir, 'svc.mdb'))), 'the store file was not written');
  },
);

test.serial(
  'a store made before check values: a wrong key is refused on its sealed keys, the right one is recorded',
  async (t) => {
    const { dataDir } = await initialised();
    const store = await openStore(dataDir, { create: false });
    await store.write(() => store.tables.meta.remove('masterKeyCheck'));
    await store.close();
    const right = await readFile(join(dataDir, 'master.key'), 'utf8');

    const wrong = await run(['agents', 'list', '--local', '--data-dir', dataDir, '--json'], {
      env: { SVC_MASTER_KEY: newKey() },
    });
    t.is(wrong.code, 3, wrong.stderr);
    t.is(errorOf(wrong).type, 'master_key_mismatch');
    const readOnly = await openStore(dataDir, { create: false, readOnly: true });
    t.is(await readOnly.tables.meta.get('masterKeyCheck'), undefined, 'a wrong key is never recorded');
    await readOnly.close();

    const ok = await run(['keys', 'create', '--scope', 'admin', '--local', '--data-dir', dataDir, '--json']);
    t.is(ok.code, 0, ok.stderr);
    const after = await openStore(dataDir, { create: false, readOnly: true });
    t.is(
      typeof (await after.tables.meta.get('masterKeyCheck')),
      'string',
      'recorded on the first opening with the key',
    );
    await after.close();
    t.is(await readFile(join(dataDir, 'master.key'), 'utf8'), right);
  },
);

/** Ways a store file gets damaged: a cut copy, a disk that lost pages, bytes overwritten. */
const damages: Array<{ name: string; apply: (file: string) => Promise<void> }> = [
  { name: 'emptied', apply: (f) => truncate(f, 0) },
  { name: 'cut inside the first page', apply: (f) => truncate(f, 3000) },
  { name: 'cut after the meta pages', apply: (f) => truncate(f, 8192 + 100) },
  {
    name: 'cut in half',
    apply: async (f) => truncate(f, Math.floor((await stat(f)).size / 2)),
  },
  { name: 'magic overwritten in both meta pages', apply: (f) => overwrite(f, [24, 4096 + 24], Buffer.alloc(4, 0xff)) },
  { name: 'meta pages zeroed', apply: (f) => overwrite(f, [0, 4096], Buffer.alloc(4096)) },
  { name: 'page size garbled', apply: (f) => overwrite(f, [48, 4096 + 48], Buffer.from([0x37, 0x13, 0, 0])) },
  {
    name: 'every tree page zeroed',
    apply: async (f) => {
      const size = (await stat(f)).size;
      await overwrite(f, [8192], Buffer.alloc(size - 8192));
    },
  },
];

async function overwrite(file: string, offsets: number[], bytes: Buffer): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    for (const offset of offsets) await handle.write(bytes, 0, bytes.length, offset);
  } finally {
    await handle.close();
  }
}

test.serial(
  'a damaged store file: ledger verify exits 3 "store file damaged: restore from backup", never a signal',
  async (t) => {
    const { base, dataDir } = await initialised();
    for (const [i, damage] of damages.entries()) {
      const copy = join(base, `damaged-${i}`);
      await cp(dataDir, copy, { recursive: true });
      await damage.apply(join(copy, 'svc.mdb'));
      const res = await run(['ledger', 'verify', '--data-dir', copy, '--json']);
      t.is(res.code, 3, `${damage.name}: code ${res.code}, ${res.stderr}`);
      const error = errorOf(res);
      t.is(error.type, 'store_damaged', damage.name);
      t.regex(error.message, /^store file damaged: restore from backup/, damage.name);
      t.regex(error.fix, /svc backup/);
    }
  },
);

test.serial('a damaged store file: serve and migrate --dry-run exit 3 too, and leave the file as it was', async (t) => {
  const { base, dataDir } = await initialised();
  for (const damage of [damages[3]!, damages[4]!]) {
    const copy = join(base, `damaged-${damage.name.replaceAll(' ', '-')}`);
    await cp(dataDir, copy, { recursive: true });
    await damage.apply(join(copy, 'svc.mdb'));
    const bytes = await readFile(join(copy, 'svc.mdb'));
    for (const args of [
      ['serve', '--host', '127.0.0.1', '--port', '0'],
      ['migrate', '--dry-run'],
    ]) {
      const res = await run([...args, '--data-dir', copy, '--json']);
      t.is(res.code, 3, `${damage.name}, ${args[0]}: ${res.stderr}`);
      t.is(errorOf(res).type, 'store_damaged');
    }
    t.true(bytes.equals(await readFile(join(copy, 'svc.mdb'))), `${damage.name}: not rewritten`);
  }
});

/** Zeroes, in a copy of the store, every page that holds `text`: pages deep in the trees, past the checks made before opening. */
async function zeroPagesHolding(file: string, text: string): Promise<number> {
  const bytes = await readFile(file);
  const pageSize = bytes.readUInt32LE(48);
  const pages = new Set<number>();
  for (let at = bytes.indexOf(text); at !== -1; at = bytes.indexOf(text, at + 1)) pages.add(Math.floor(at / pageSize));
  await overwrite(
    file,
    [...pages].map((p) => p * pageSize),
    Buffer.alloc(pageSize),
  );
  return pages.size;
}

test.serial(
  'damage inside the store file: commands exit 3 store_damaged with its fix; serve answers 503 and /readyz is degraded',
  async (t) => {
    const { base, dataDir } = await initialised();
    const minted = await run(['keys', 'create', '--scope', 'admin', '--local', '--data-dir', dataDir, '--json']);
    t.is(minted.code, 0, minted.stderr);
    const key = JSON.parse(minted.stdout) as { id: string; key: string };
    const copy = join(base, 'damaged-inside');
    await cp(dataDir, copy, { recursive: true });
    t.true((await zeroPagesHolding(join(copy, 'svc.mdb'), key.id)) > 0);

    for (const args of [
      ['ledger', 'verify'],
      ['keys', 'list', '--local'],
      ['keys', 'create', '--scope', 'admin', '--local'],
    ]) {
      const res = await run([...args, '--data-dir', copy, '--json']);
      t.is(res.code, 3, `${args.join(' ')}: ${res.stdout} ${res.stderr}`);
      const error = errorOf(res);
      t.is(error.type, 'store_damaged', args.join(' '));
      t.regex(error.message, /^store file damaged: restore from backup/);
      t.regex(error.fix, /svc backup/);
      t.is(error.exitCode, 3);
    }
    const text = await run(['ledger', 'verify', '--data-dir', copy]);
    t.is(text.code, 3);
    t.regex(text.stderr, /store file damaged: restore from backup/);
    t.notRegex(text.stderr, /Code: -30796/);

    const server = await startServer({ dataDir: copy });
    try {
      for (const [method, path, json] of [
        ['GET', '/v1/whoami', undefined],
        ['POST', '/v1/actions/authorize', { action: 'payment' }],
      ] as const) {
        const res = await call(server.url, method, path, { headers: bearer(key.key), ...(json ? { json } : {}) });
        assertError(t, res, 503, 'store_unavailable');
        t.regex(res.body.error.message, /damaged/);
      }
      const ready = await call(server.url, 'GET', '/readyz');
      t.is(ready.status, 503);
      t.deepEqual(ready.body, { status: 'degraded', reason: 'store_damaged' });
    } finally {
      await server.stop();
    }
  },
);

test.serial(
  'only serve and init create a store: other commands on a missing one exit 3 naming the directory',
  async (t) => {
    const base = await tempDir();
    dirs.push(base);
    const missing = join(base, 'mistyped');
    for (const args of [
      ['agents', 'list', '--local'],
      ['keys', 'create', '--scope', 'admin', '--local'],
      ['ledger', 'verify'],
      ['migrate'],
      ['backup', '--out', join(base, 'copy.mdb')],
      ['owner', 'reset-password', '--email', 'admin@localhost', '--local'],
    ]) {
      const res = await run([...args, '--data-dir', missing, '--json']);
      t.is(res.code, 3, `${args.join(' ')}: ${res.stderr}`);
      t.is(errorOf(res).type, 'store_not_found', args.join(' '));
      t.true(errorOf(res).message.includes(missing), args.join(' '));
      t.regex(errorOf(res).fix, /--data-dir/);
    }
    t.deepEqual(await readdir(base), [], 'nothing was created');

    // An existing but empty directory is no store either (the command ran from the wrong place).
    await mkdir(missing);
    const empty = await run(['agents', 'list', '--local', '--data-dir', missing, '--json']);
    t.is(empty.code, 3);
    t.is(errorOf(empty).type, 'store_not_found');
    t.deepEqual(await readdir(missing), []);
  },
);

test.serial('a data dir that is a file: not_a_directory, exit 3, for serve and for local commands', async (t) => {
  const base = await tempDir();
  dirs.push(base);
  const file = join(base, 'data');
  await writeFile(file, 'not a directory');
  for (const args of [
    ['serve', '--host', '127.0.0.1', '--port', '0'],
    ['agents', 'list', '--local'],
  ]) {
    const res = await run([...args, '--data-dir', file, '--json']);
    t.is(res.code, 3, res.stderr);
    t.is(errorOf(res).type, 'not_a_directory');
    t.true(errorOf(res).message.includes(file));
    t.regex(errorOf(res).fix, /--data-dir/);
    const under = await run([...args, '--data-dir', join(file, 'inner'), '--json']);
    t.is(under.code, 3, under.stderr);
    t.true(['not_a_directory', 'store_not_found'].includes(errorOf(under).type), errorOf(under).type);
  }
  t.is(await readFile(file, 'utf8'), 'not a directory');
});

/**
 * Runs svc as a user who may read but not write the data dir: as root (these machines), the
 * unprivileged `nobody`, for whom permissions hold; otherwise this same user, after chmod.
 */
function svcAsReader(args: string[], home: string): Promise<CliResult> {
  const asRoot = process.getuid?.() === 0;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: cleanEnv({ HOME: home }),
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function readOnlyCopy(dataDir: string, base: string, name: string): Promise<string> {
  const copy = join(base, name);
  await cp(dataDir, copy, { recursive: true });
  const asRoot = process.getuid?.() === 0;
  await chmod(base, 0o755);
  for (const entry of await readdir(copy)) {
    if (asRoot) await chown(join(copy, entry), 65534, 65534);
    await chmod(join(copy, entry), 0o400);
  }
  if (asRoot) await chown(copy, 65534, 65534);
  await chmod(copy, 0o500);
  return copy;
}

async function snapshot(dir: string): Promise<string> {
  const entries = await readdir(dir);
  const parts = await Promise.all(
    entries
      .sort()
      .map(
        async (e) => `${e}:${(await stat(join(dir, e))).mtimeMs}:${(await readFile(join(dir, e))).toString('base64')}`,
      ),
  );
  return parts.join('\n');
}

test.serial(
  'read-only commands work on a read-only copy of a data dir and write nothing; writers say permission denied',
  async (t) => {
    const { base, dataDir } = await initialised();
    const home = join(base, 'home');
    await mkdir(home);
    if (process.getuid?.() === 0) await chown(home, 65534, 65534);
    const copy = await readOnlyCopy(dataDir, base, 'readonly');
    const before = await snapshot(copy);

    const verify = await svcAsReader(['ledger', 'verify', '--data-dir', copy, '--json'], home);
    t.is(verify.code, 0, verify.stderr + verify.stdout);
    t.true((JSON.parse(verify.stdout) as Json).ok);
    const list = await svcAsReader(['agents', 'list', '--local', '--data-dir', copy, '--json'], home);
    t.is(list.code, 0, list.stderr + list.stdout);
    t.deepEqual(JSON.parse(list.stdout), { data: [] });
    t.is(await snapshot(copy), before, 'no file was created or changed');

    // A command that writes is refused as the system refuses it: exit 3, permission_denied.
    const write = await svcAsReader(
      ['keys', 'create', '--scope', 'admin', '--local', '--data-dir', copy, '--json'],
      home,
    );
    t.is(write.code, 3, write.stderr + write.stdout);
    t.is(errorOf(write).type, 'permission_denied');
    t.true(errorOf(write).message.includes(copy));
    t.is(await snapshot(copy), before);
  },
);

const fullDiskTitle = 'a new store on a full disk: disk_full, exit 3, never a bus error, and no store file left';
test.serial(fullDiskTitle, async (t) => {
  const disk = mountSmallDisk('256k');
  try {
    // Fill it: LMDB would map its new lock file there and die of SIGBUS writing to it.
    t.true((await fillDisk(join(disk.dir, 'filler'))) > 0);
    const res = await run([...initArgs(join(disk.dir, 'data')), '--json']);
    t.is(res.code, 3, res.stderr);
    t.is(errorOf(res).type, 'disk_full');
    t.true(errorOf(res).message.includes(join(disk.dir, 'data')));
    t.regex(errorOf(res).fix, /Free space/);
    t.deepEqual(await readdir(join(disk.dir, 'data')), [], 'no empty store file that would later read as damaged');
  } finally {
    disk.remove();
  }
});
