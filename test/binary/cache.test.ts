import test from 'ava';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { CacheError, manifestHash, materialize, type FileSource, type Manifest } from '../../src/binary/cache.js';
import { binaryCacheCandidates } from '../../src/settings/binary-cache.js';
import { removeDir, tempDir } from '../helpers/process.js';

/**
 * The single executable's private cache of native code (src/binary/cache.ts): written whole,
 * private, named by its content, and checked file by file before every use.
 */

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

function source(contents: Record<string, string>, version = '1.2.3'): FileSource & { reads: string[] } {
  const files = Object.entries(contents).map(([path, text]) => ({
    path,
    size: Buffer.byteLength(text),
    sha256: sha256(Buffer.from(text)),
  }));
  const manifest: Manifest = { version, hash: manifestHash(files), files };
  const reads: string[] = [];
  return {
    manifest,
    reads,
    read(path) {
      reads.push(path);
      return Buffer.from(contents[path]!);
    },
  };
}

const FILES = {
  'node_modules/addon/package.json': '{"name":"addon","main":"index.js"}',
  'node_modules/addon/index.js': 'module.exports = { answer: 42 };',
  'node_modules/addon/prebuilds/addon.node': 'pretend this is a shared object',
};

const mode = (path: string) => statSync(path).mode & 0o777;

test('the first use writes every file, read-only, in a private folder named by version and content hash', async (t) => {
  const base = join(await tempDir(), 'cache', 'svc');
  t.teardown(() => removeDir(join(base, '..', '..')));
  const src = source(FILES);
  const dir = materialize(src, [base]);
  t.is(dir, join(base, `1.2.3-${src.manifest.hash.slice(0, 16)}`));
  for (const [path, text] of Object.entries(FILES)) {
    t.is(readFileSync(join(dir, path), 'utf8'), text);
    t.is(mode(join(dir, path)), 0o400, path);
  }
  t.is(mode(base), 0o700);
  t.is(mode(dir), 0o700);
  t.is(mode(join(dir, 'node_modules', 'addon')), 0o700);
  t.deepEqual(
    readdirSync(base).filter((e) => e.startsWith('.')),
    [],
    'no temporary folder is left',
  );
});

test('an intact folder is used as it is: nothing is read from the binary again', async (t) => {
  const base = await tempDir();
  t.teardown(() => removeDir(base));
  const first = source(FILES);
  const dir = materialize(first, [base]);
  const again = source(FILES);
  t.is(materialize(again, [base]), dir);
  t.deepEqual(again.reads, []);
});

test('a changed, truncated, missing or symlinked file is never used: the folder is written again', async (t) => {
  const base = await tempDir();
  t.teardown(() => removeDir(base));
  const dir = materialize(source(FILES), [base]);
  const addon = join(dir, 'node_modules/addon/prebuilds/addon.node');
  const index = join(dir, 'node_modules/addon/index.js');

  const tamper: Array<[string, () => void]> = [
    [
      'same size, other bytes',
      () => {
        chmodSync(addon, 0o600);
        writeFileSync(addon, 'PRETEND this is a shared object');
      },
    ],
    [
      'truncated',
      () => {
        chmodSync(index, 0o600);
        writeFileSync(index, 'module.exports');
      },
    ],
    ['missing', () => rmSync(index)],
    [
      'a symbolic link to an identical copy elsewhere',
      () => {
        const elsewhere = join(base, 'elsewhere.js');
        writeFileSync(elsewhere, FILES['node_modules/addon/index.js']);
        rmSync(index);
        symlinkSync(elsewhere, index);
      },
    ],
    ['the folder opened to others', () => chmodSync(dir, 0o755)],
  ];
  for (const [what, change] of tamper) {
    change();
    const src = source(FILES);
    t.is(materialize(src, [base]), dir, what);
    t.is(src.reads.length, Object.keys(FILES).length, `${what}: every file is written again`);
    t.is(readFileSync(addon, 'utf8'), FILES['node_modules/addon/prebuilds/addon.node'], what);
    t.is(readFileSync(index, 'utf8'), FILES['node_modules/addon/index.js'], what);
    t.false(statSync(index).isSymbolicLink(), what);
    t.is(mode(dir), 0o700, what);
  }
  t.deepEqual(
    readdirSync(base)
      .filter((e) => e.startsWith('.'))
      .sort(),
    [],
    'the damaged copies are gone',
  );
});

test('other content is another folder: two builds never share or overwrite one', async (t) => {
  const base = await tempDir();
  t.teardown(() => removeDir(base));
  const a = materialize(source(FILES), [base]);
  const b = materialize(source({ ...FILES, 'node_modules/addon/index.js': 'module.exports = { answer: 43 };' }), [
    base,
  ]);
  t.not(a, b);
  t.is(readFileSync(join(a, 'node_modules/addon/index.js'), 'utf8'), FILES['node_modules/addon/index.js']);
});

test('a base folder of ours open to others is closed (0700); one owned by another user is refused, naming the owner and SVC_CACHE_DIR', async (t) => {
  const root = await tempDir();
  t.teardown(() => removeDir(root));
  const wide = join(root, 'wide');
  mkdirSync(wide, { mode: 0o755 });
  chmodSync(wide, 0o755);
  materialize(source(FILES), [wide]);
  t.is(mode(wide), 0o700);

  // Playing another user: every folder here then belongs to someone else.
  const other = (process.getuid?.() ?? 1000) + 1;
  const error = t.throws(() => materialize(source(FILES), [join(root, 'wide')], { uid: other }), {
    instanceOf: CacheError,
  });
  t.regex(error.message, /SVC_CACHE_DIR/);
  t.true(error.message.includes(`${wide}: owned by uid ${statSync(wide).uid}, not by this user (${other})`));
});

test('a candidate that cannot be used (a file, not a folder) is passed over for the next', async (t) => {
  const root = await tempDir();
  t.teardown(() => removeDir(root));
  writeFileSync(join(root, 'not-a-folder'), '');
  const dir = materialize(source(FILES), [join(root, 'not-a-folder'), join(root, 'second')]);
  t.true(dir.startsWith(join(root, 'second')));
});

test('a binary whose copy of a file does not match its digest leaves nothing in place', async (t) => {
  const base = await tempDir();
  t.teardown(() => removeDir(base));
  const src = source(FILES);
  const corrupt: FileSource = {
    manifest: src.manifest,
    read: (path) => Buffer.from(`${FILES[path as keyof typeof FILES]}!`),
  };
  const error = t.throws(() => materialize(corrupt, [base]), { instanceOf: CacheError });
  t.regex(error.message, /does not match its digest/);
  t.deepEqual(readdirSync(base), []);
});

test('a file list with an unsafe path, or that does not match its hash, is refused before anything is written', async (t) => {
  const base = await tempDir();
  t.teardown(() => removeDir(base));
  const escape = source({ '../outside.js': 'x' });
  t.throws(() => materialize(escape, [base]), { instanceOf: CacheError, message: /unsafe path: \.\.\/outside\.js/ });
  const absolute = source({ '/etc/passwd': 'x' });
  t.throws(() => materialize(absolute, [base]), { instanceOf: CacheError, message: /unsafe path/ });
  const src = source(FILES);
  const forged: FileSource = { ...src, manifest: { ...src.manifest, hash: '0'.repeat(64) } };
  t.throws(() => materialize(forged, [base]), { instanceOf: CacheError, message: /does not match its hash/ });
  t.deepEqual(readdirSync(base), []);
  t.false(existsSync(join(base, '..', 'outside.js')));
});

test("two processes starting at once: the one that renames second uses the first one's complete copy", async (t) => {
  const base = await tempDir();
  t.teardown(() => removeDir(base));
  const inner = source(FILES);
  const outer = source(FILES);
  let raced = '';
  const racing: FileSource = {
    manifest: outer.manifest,
    read(path) {
      // While this one writes its temporary copy, another process puts its whole copy in place.
      if (!raced) raced = materialize(inner, [base]);
      return outer.read(path);
    },
  };
  const dir = materialize(racing, [base]);
  t.is(dir, raced);
  t.is(inner.reads.length, Object.keys(FILES).length);
  t.is(readFileSync(join(dir, 'node_modules/addon/index.js'), 'utf8'), FILES['node_modules/addon/index.js']);
  t.deepEqual(
    readdirSync(base).filter((e) => e.startsWith('.')),
    [],
  );
});

test('temporary folders left by runs that died are removed once old; a fresh one (maybe in use) is kept', async (t) => {
  const base = await tempDir();
  t.teardown(() => removeDir(base));
  mkdirSync(join(base, '.partial-old'));
  mkdirSync(join(base, '.stale-old'));
  mkdirSync(join(base, '.partial-fresh'));
  const longAgo = new Date(Date.now() - 60 * 60_000);
  utimesSync(join(base, '.partial-old'), longAgo, longAgo);
  utimesSync(join(base, '.stale-old'), longAgo, longAgo);
  materialize(source(FILES), [base]);
  t.deepEqual(
    readdirSync(base)
      .filter((e) => e.startsWith('.'))
      .sort(),
    ['.partial-fresh'],
  );
});

test('the cache folder: SVC_CACHE_DIR alone when set; else systemd, XDG, home, then the temp folder', (t) => {
  t.deepEqual(binaryCacheCandidates({ SVC_CACHE_DIR: '/srv/svc-cache', HOME: '/home/ops' }), ['/srv/svc-cache']);
  const all = binaryCacheCandidates({
    CACHE_DIRECTORY: '/var/cache/svc:/var/cache/other',
    XDG_CACHE_HOME: '/home/ops/.xdg-cache',
    HOME: '/home/ops',
  });
  t.deepEqual(all.slice(0, 3), ['/var/cache/svc', '/home/ops/.xdg-cache/svc', '/home/ops/.cache/svc']);
  t.is(all.length, 4);
  t.regex(all[3]!, /svc-\w+$/);
  // Relative values are ignored (as XDG says of its variables); a home of / gives no candidate.
  const relative = binaryCacheCandidates({ SVC_CACHE_DIR: 'cache', XDG_CACHE_HOME: '.cache', HOME: '/' });
  t.false(relative.some((c) => !c.startsWith('/')));
  t.false(relative.includes('/.cache/svc'));
});
