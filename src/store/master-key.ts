import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AppError } from '../errors/app-error.js';
import { systemError } from '../errors/system.js';

/**
 * The master key encrypts secrets at rest and keys derived secrets (the cookie seal). It comes
 * from SVC_MASTER_KEY, from the file SVC_MASTER_KEY_FILE names (a mounted secret), or from
 * `master.key` beside the store.
 *
 * Invariants:
 * - It is never logged and never stored in the store itself; the store keeps only a check value
 *   (an HMAC of a fixed label under the key), enough to tell the right key from another.
 * - A key file is created only for a new store (`svc serve` and `svc init` on an empty data dir),
 *   with mode 0600, whole or not at all. A store that exists is never given a new key: a missing
 *   or different key stops the command with exit 3 and the fix of using the backup's master.key.
 * - Nothing is written when the key already exists (a read-only copy of a data dir works).
 */
export const MASTER_KEY_FILE = 'master.key';
/** The meta entry holding the check value. */
export const MASTER_KEY_CHECK = 'masterKeyCheck';

export interface MasterKeySource {
  dataDir: string;
  /** SVC_MASTER_KEY: base64url of 32 bytes. */
  fromSettings: string | null;
  /** SVC_MASTER_KEY_FILE: a file holding it in the same form. */
  file: string | null;
}

/** Where the key is looked for, as the operator would name it in a fix. */
export function keyLocation(source: MasterKeySource): string {
  if (source.fromSettings) return 'SVC_MASTER_KEY';
  if (source.file) return `SVC_MASTER_KEY_FILE (${resolve(source.file)})`;
  return join(resolve(source.dataDir), MASTER_KEY_FILE);
}

/**
 * The master key, or undefined when no key exists where it is looked for (the data dir's
 * master.key is absent). Throws when a key is named but cannot be read or is malformed.
 */
export function readMasterKey(source: MasterKeySource): Buffer | undefined {
  if (source.fromSettings) return parseKey(source.fromSettings, 'SVC_MASTER_KEY');
  const file = source.file ? resolve(source.file) : join(resolve(source.dataDir), MASTER_KEY_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      if (!source.file) return undefined;
      throw new AppError('master_key_missing', {
        message: `SVC_MASTER_KEY_FILE names ${file}, which does not exist`,
        cause: err,
      });
    }
    throw systemError(err, { kind: 'file', path: file }) ?? err;
  }
  return parseKey(text.trim(), file);
}

function parseKey(text: string, where: string): Buffer {
  const key = Buffer.from(text, 'base64url');
  if (key.length !== 32)
    throw new AppError('master_key_mismatch', {
      message: `${where} does not hold a master key (base64url of 32 bytes)`,
    });
  return key;
}

/** Creates master.key in the data dir for a new store; the data dir exists. */
export function createMasterKey(dataDir: string): Buffer {
  const dir = resolve(dataDir);
  const file = join(dir, MASTER_KEY_FILE);
  // Written whole to a private temporary file, flushed, then linked into place: the key file
  // either does not exist or holds a whole key, whatever crashes or races with another process.
  const temp = join(dir, `.${MASTER_KEY_FILE}.${process.pid}.${randomBytes(6).toString('hex')}`);
  try {
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, randomBytes(32).toString('base64url'));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(temp, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      unlinkSync(temp);
    }
  } catch (err) {
    throw systemError(err, { kind: 'data-dir', path: dir }) ?? err;
  }
  return parseKey(readFileSync(file, 'utf8').trim(), file);
}

/** The check value the store keeps for its key: HMAC-SHA-256 of a fixed label, base64url. */
export function masterKeyCheck(key: Buffer): string {
  return createHmac('sha256', key).update('svc master key check v1').digest('base64url');
}

/** Whether `key` is the key whose check value is `stored` (constant time). */
export function matchesCheck(key: Buffer, stored: string): boolean {
  const expected = Buffer.from(masterKeyCheck(key));
  const given = Buffer.from(stored);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export function missingKey(source: MasterKeySource): AppError {
  return new AppError('master_key_missing', {
    message: `the store in ${resolve(source.dataDir)} exists but its master key is missing (looked for ${keyLocation(source)})`,
  });
}

export function wrongKey(source: MasterKeySource): AppError {
  return new AppError('master_key_mismatch', {
    message: `the master key from ${keyLocation(source)} is not the one the store in ${resolve(source.dataDir)} was sealed with`,
  });
}

/** The key beside the store, created if it does not exist yet (tests and tools; commands go through createApp). */
export function loadMasterKey(dataDir: string, fromSettings: string | null): Buffer {
  const source = { dataDir, fromSettings, file: null };
  return readMasterKey(source) ?? createMasterKey(dataDir);
}
