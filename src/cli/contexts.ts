import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CliFailure, EXIT } from './base-command.js';
import { configDir } from './config-dir.js';

/**
 * Where `svc login` keeps who the command line is signed in as, per server: named contexts, as
 * kubectl and the Heroku CLI keep them, and which one is current.
 * Rules:
 * - The folder is oclif's config dir for svc: `$SVC_CONFIG_DIR`, else `$XDG_CONFIG_HOME/svc`,
 *   else `~/.config/svc` (made 0700). `contexts.json` (0600) holds each context's server, person,
 *   workspace and expiry, and its tokens sealed: AES-256-GCM under the key in `contexts.key`
 *   (0600, 32 random bytes, made on first use), the context's name and server bound in as
 *   additional data, so a sealed entry cannot be moved to another context or server.
 * - What "sealed" buys, and what not: a copy of contexts.json alone (a dotfiles repository, a
 *   support bundle, a screenshot) gives no usable token. Whoever can read both files, the same user
 *   or root, can use the tokens: it is not a keyring. Revoke with `svc logout`.
 * - Files are replaced whole (written beside, then renamed), never left half written.
 */
export interface StoredContext {
  url: string;
  user: { id: string; email: string; name: string };
  workspace: { id: string; name: string };
  role: string;
  loginId: string;
  /** When the access token expires (ISO 8601). */
  accessExpiresAt: string;
  /** The access and refresh tokens, sealed. */
  sealed: string;
}

export interface ContextsFile {
  current: string | null;
  contexts: Record<string, StoredContext>;
}

export interface Tokens {
  access: string;
  refresh: string;
}

const FILE = 'contexts.json';
const KEY = 'contexts.key';
/** A context's name: what `--name` and `--context` take. */
export const CONTEXT_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,62}$/;

function usage(message: string, type = 'usage', fix?: string): never {
  throw new CliFailure(message, { exit: EXIT.usage, type, ...(fix ? { fix } : {}) });
}

/** A context name as typed, or a usage error. */
export function contextName(name: string): string {
  if (!CONTEXT_NAME.test(name))
    usage(
      `${JSON.stringify(name)} is not a context name`,
      'usage',
      'Use 1 to 63 letters, digits, dots, dashes, underscores or colons, starting with a letter or digit.',
    );
  return name;
}

/** The default name of a server's context: its host (and port). */
export function defaultContextName(url: string): string {
  return new URL(url).host.replace(/[^A-Za-z0-9._:-]/g, '-');
}

/** The contexts file, or an empty one when there is none yet. */
export function readContexts(): ContextsFile {
  let text: string;
  try {
    text = readFileSync(join(configDir(), FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { current: null, contexts: {} };
    return usage(`cannot read ${join(configDir(), FILE)}: ${(err as Error).message}`, 'invalid_configuration');
  }
  try {
    const parsed = JSON.parse(text) as Partial<ContextsFile>;
    return {
      current: typeof parsed.current === 'string' ? parsed.current : null,
      contexts: parsed.contexts && typeof parsed.contexts === 'object' ? parsed.contexts : {},
    };
  } catch {
    return usage(
      `${join(configDir(), FILE)} is not JSON`,
      'invalid_configuration',
      'Remove the file and run svc login again.',
    );
  }
}

const writeWhole = (path: string, data: string | Buffer) => {
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, data, { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, path);
};

export function writeContexts(file: ContextsFile): void {
  const folder = configDir();
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  writeWhole(join(folder, FILE), `${JSON.stringify(file, null, 2)}\n`);
}

function sealingKey(create: boolean): Buffer | null {
  const path = join(configDir(), KEY);
  try {
    const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64url');
    if (key.length === 32) return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (!create) return null;
  mkdirSync(configDir(), { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  writeWhole(path, key.toString('base64url'));
  return key;
}

const aad = (name: string, url: string) => Buffer.from(`svc context\n${name}\n${url}`, 'utf8');

export function sealTokens(name: string, url: string, tokens: Tokens): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(true)!, iv);
  cipher.setAAD(aad(name, url));
  const body = Buffer.concat([cipher.update(JSON.stringify(tokens), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** The tokens of a context, or null when they cannot be opened (another key, a moved entry). */
export function openTokens(name: string, context: StoredContext): Tokens | null {
  const key = sealingKey(false);
  if (!key) return null;
  try {
    const raw = Buffer.from(context.sealed, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAAD(aad(name, context.url));
    decipher.setAuthTag(raw.subarray(12, 28));
    const tokens = JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8'));
    return typeof tokens?.access === 'string' && typeof tokens?.refresh === 'string' ? (tokens as Tokens) : null;
  } catch {
    return null;
  }
}

/** Saves one context (and makes it current when asked), re-reading the file first: another command may have written it. */
export function saveContext(name: string, context: StoredContext, makeCurrent: boolean): void {
  const file = readContexts();
  file.contexts[name] = context;
  if (makeCurrent) file.current = name;
  writeContexts(file);
}

export function removeContext(name: string): void {
  const file = readContexts();
  delete file.contexts[name];
  if (file.current === name) file.current = null;
  writeContexts(file);
}

/** The context a command uses: the one named (`--context`, SVC_CONTEXT), else the current one. */
export function chosenContext(named: string | undefined): { name: string; context: StoredContext } | null {
  const file = readContexts();
  const name = named ?? file.current;
  if (name === null || name === undefined) return null;
  const context = file.contexts[name];
  if (!context) {
    if (named === undefined) return null;
    const known = Object.keys(file.contexts);
    throw new CliFailure(`no context named ${name}`, {
      exit: EXIT.usage,
      type: 'unknown_context',
      fix: known.length
        ? `Use one of: ${known.join(', ')}; or svc login --url URL --name ${name}.`
        : `Sign in first: svc login --url URL --name ${name}.`,
    });
  }
  return { name, context };
}
