import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The master key encrypts secrets at rest and keys derived secrets (the cookie seal). It comes
 * from SVC_MASTER_KEY, or from `master.key` beside the store, created once with mode 0600.
 * It is never logged and never stored in the store itself.
 */
export const MASTER_KEY_FILE = 'master.key';

export function loadMasterKey(dataDir: string, fromSettings: string | null): Buffer {
  if (fromSettings) {
    const key = Buffer.from(fromSettings, 'base64url');
    if (key.length !== 32) throw new Error('masterKey must be 32 bytes, base64url-encoded');
    return key;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, MASTER_KEY_FILE);
  // Written whole to a private temporary file, flushed, then linked into place: the key file
  // either does not exist or holds a whole key, whatever crashes or races with another process.
  const temp = join(dataDir, `.${MASTER_KEY_FILE}.${process.pid}.${randomBytes(6).toString('hex')}`);
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
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64url');
  if (key.length !== 32) throw new Error(`${file} does not hold a 32-byte key`);
  return key;
}
