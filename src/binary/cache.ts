import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';

/**
 * The single executable's files that must exist on disk (native addons, and the JavaScript that
 * loads them: the operating system loads a shared object only from a file), written once into a
 * private cache folder and checked at every start before anything in them is loaded.
 *
 * Rules it keeps:
 * - The folder is `<base>/<version>-<hash>`, where the hash covers every file's path and SHA-256
 *   (computed at build time): a folder name never stands for other content, so two versions, or two
 *   builds of one version, never share a folder or overwrite each other's.
 * - The base and the folder belong to this user and are closed to everyone else (0700; a wider
 *   mode on a folder of ours is narrowed). A base owned by another user is refused: whoever can
 *   write there could make this process load their code.
 * - Before anything is loaded, every file is read back and its size, owner and SHA-256 compared
 *   with the manifest the binary carries (the manifest itself is inside the binary). A file that is
 *   missing, changed, truncated or a symbolic link is never loaded: the folder is written again.
 * - A folder is written whole under a temporary name and renamed into place: no process ever sees
 *   half of one, and two processes starting at once both end up on one complete copy.
 * - Files are written read-only (0400); nothing here is ever modified in place.
 * - A machine without a writable home or /tmp still works: the candidates are tried in order
 *   (see `binaryCacheCandidates`), and an operator can name the folder with SVC_CACHE_DIR.
 */

export interface ManifestFile {
  /** Path inside the folder, with forward slashes (`node_modules/lmdb/dist/index.cjs`). */
  path: string;
  size: number;
  sha256: string;
}

export interface Manifest {
  version: string;
  /** SHA-256 over every file's path and digest; the folder's name carries its first 16 hex digits. */
  hash: string;
  files: ManifestFile[];
}

export interface FileSource {
  manifest: Manifest;
  /** The bytes of one manifest file (from the binary's embedded assets). */
  read(path: string): Uint8Array;
}

export class CacheError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CacheError';
  }
}

/** The manifest's hash, as the build computes it: one line per file, `<sha256>  <path>`, sorted by path. */
export function manifestHash(files: readonly ManifestFile[]): string {
  const lines = [...files]
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    .map((f) => `${f.sha256}  ${f.path}\n`);
  return createHash('sha256').update(lines.join('')).digest('hex');
}

/**
 * Makes sure the manifest's files are on disk, complete and unchanged, in the first usable
 * candidate base folder, and returns their folder. `options.uid` is the user whose folders and
 * files are accepted (default: this process's; tests pass another to play a foreign owner).
 * @example
 * const dir = materialize(source, binaryCacheCandidates());
 * const load = createRequire(join(dir, 'index.js'));
 */
export function materialize(
  source: FileSource,
  candidates: readonly string[],
  options: { uid?: number | undefined } = {},
): string {
  const { manifest } = source;
  const uid = 'uid' in options ? options.uid : process.getuid?.();
  checkManifest(manifest);
  const name = `${manifest.version.replace(/[^0-9A-Za-z.+-]/g, '_')}-${manifest.hash.slice(0, 16)}`;
  const problems: string[] = [];
  for (const candidate of candidates) {
    let base: string;
    try {
      base = privateBase(candidate, uid);
    } catch (err) {
      problems.push(`${candidate}: ${(err as Error).message}`);
      continue;
    }
    const dir = join(base, name);
    if (isIntact(dir, manifest, uid)) return dir;
    try {
      return write(base, dir, source, uid);
    } catch (err) {
      problems.push(`${dir}: ${(err as Error).message}`);
    }
  }
  throw new CacheError(
    `svc cannot set up its native code: no usable cache folder (set SVC_CACHE_DIR to a folder of this user's).\n  ${problems.join('\n  ')}`,
  );
}

function checkManifest(manifest: Manifest): void {
  for (const file of manifest.files) {
    const path = normalize(file.path);
    if (isAbsolute(path) || path.split(sep).includes('..') || path !== file.path.split('/').join(sep)) {
      throw new CacheError(`the binary's file list names an unsafe path: ${file.path}`);
    }
  }
  if (manifestHash(manifest.files) !== manifest.hash)
    throw new CacheError("the binary's file list does not match its hash");
}

/** The base folder, created if need be, resolved, ours and closed to others. */
function privateBase(candidate: string, uid: number | undefined): string {
  mkdirSync(candidate, { recursive: true, mode: 0o700 });
  const real = realpathSync(candidate);
  const stat = lstatSync(real);
  if (!stat.isDirectory()) throw new Error('not a folder');
  if (uid !== undefined && stat.uid !== uid) throw new Error(`owned by uid ${stat.uid}, not by this user (${uid})`);
  if ((stat.mode & 0o077) !== 0) chmodSync(real, 0o700);
  return real;
}

/** Every file present, a regular file of ours, of the manifest's size and SHA-256; the folder itself ours and private. */
function isIntact(dir: string, manifest: Manifest, uid: number | undefined): boolean {
  try {
    const stat = lstatSync(dir);
    if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid) || (stat.mode & 0o077) !== 0) return false;
  } catch {
    return false;
  }
  const buffer = Buffer.allocUnsafe(1 << 20);
  for (const file of manifest.files) {
    let fd: number;
    try {
      fd = openSync(join(dir, file.path), constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch {
      return false;
    }
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile() || stat.size !== file.size || (uid !== undefined && stat.uid !== uid)) return false;
      const hash = createHash('sha256');
      for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) hash.update(buffer.subarray(0, n));
      if (hash.digest('hex') !== file.sha256) return false;
    } finally {
      closeSync(fd);
    }
  }
  return true;
}

/** Writes the folder whole under a temporary name, then renames it into place (or takes another process's copy). */
function write(base: string, dir: string, source: FileSource, uid: number | undefined): string {
  removeLeftovers(base);
  const partial = mkdtempSync(join(base, '.partial-'));
  try {
    for (const file of source.manifest.files) {
      const bytes = source.read(file.path);
      if (createHash('sha256').update(bytes).digest('hex') !== file.sha256) {
        throw new Error(`the binary's copy of ${file.path} does not match its digest`);
      }
      const target = join(partial, file.path);
      mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
      writeFileSync(target, bytes, { mode: 0o400, flag: 'wx' });
    }
    if (exists(dir)) {
      // A damaged copy: set it aside first (a rename is atomic), then remove it.
      const stale = join(base, `.stale-${randomBytes(6).toString('hex')}`);
      renameSync(dir, stale);
      rmSync(stale, { recursive: true, force: true });
    }
    try {
      renameSync(partial, dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
      // Another process put its copy in place first: use it, if it is intact.
      if (!isIntact(dir, source.manifest, uid))
        throw new Error('another copy appeared and is not intact', { cause: err });
    }
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  if (!isIntact(dir, source.manifest, uid)) throw new Error('the files written do not read back intact');
  return dir;
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Temporary folders of runs that died while writing (older than ten minutes, so none still in use). */
function removeLeftovers(base: string): void {
  const cutoff = Date.now() - 10 * 60_000;
  for (const entry of readdirSync(base)) {
    if (!entry.startsWith('.partial-') && !entry.startsWith('.stale-')) continue;
    const path = join(base, entry);
    try {
      if (lstatSync(path).mtimeMs < cutoff) rmSync(path, { recursive: true, force: true });
    } catch {
      // Someone else removed it meanwhile.
    }
  }
}
