import { readFile } from 'node:fs/promises';
import { fileProblem } from '../errors/system.js';
import type { VerifyKeys } from './verify.js';

/**
 * The key set a receipt is verified against away from the server (`svc receipt verify`): a JSON
 * Web Key Set file, or one fetched once from an http(s) URL with undici, as every outbound call.
 *
 * Rules:
 * - A URL must answer 200 within 10 s with at most 1 MB; anything else is "cannot get it there".
 * - The text must be a JSON object with a `keys` array; anything else is refused, naming where
 *   it came from. A set without any receipt key (`use: "sig"`) is returned with a warning: no
 *   receipt can verify against it.
 * - Failures are KeySetError, `remote` saying whether the URL (true) or the file (false) failed,
 *   so that a caller can tell "cannot reach" from "wrong input".
 *
 * @example
 * const { jwks } = await loadKeySet('https://svc.example.com/.well-known/jwks.json');
 */
export class KeySetError extends Error {
  readonly remote: boolean;
  readonly fix: string;
  /** `unreachable`: the URL did not answer with a key set's text; `invalid_jwks`: the text is no key set. */
  readonly type: 'unreachable' | 'invalid_jwks';
  constructor(message: string, remote: boolean, fix: string, type: 'unreachable' | 'invalid_jwks' = 'invalid_jwks') {
    super(message);
    this.name = 'KeySetError';
    this.remote = remote;
    this.fix = fix;
    this.type = type;
  }
}

export const MAX_JWKS_BYTES = 1024 * 1024;
const SHAPE_FIX = 'A key set is a JSON object { "keys": [...] }, as served at /.well-known/jwks.json.';
const FETCH_FIX =
  "Check the address (--jwks, or --url for the server's /.well-known/jwks.json), or pass the key set as a file.";

/** RFC 8615: well-known paths are at the root of the host, whatever path the base address has. */
export function jwksUrlOf(base: URL): string {
  return new URL('/.well-known/jwks.json', base).toString();
}

export async function loadKeySet(source: string): Promise<{ jwks: VerifyKeys['jwks']; warning: string | null }> {
  const remote = /^https?:\/\//i.test(source);
  const where = remote ? source : `the file ${source}`;
  const raw = remote
    ? await fetchText(source)
    : await readFile(source, 'utf8').catch((err: NodeJS.ErrnoException) => {
        throw new KeySetError(
          `cannot read the key set file ${source}: ${fileProblem(err)}`,
          false,
          'Pass --jwks a JSON Web Key Set file, or its URL.',
        );
      });
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new KeySetError(`${where} does not hold JSON`, remote, SHAPE_FIX);
  }
  if (typeof parsed !== 'object' || parsed === null || !Array.isArray((parsed as { keys?: unknown }).keys))
    throw new KeySetError(`${where} is not a JSON Web Key Set (no "keys" array)`, remote, SHAPE_FIX);
  const jwks = parsed as VerifyKeys['jwks'];
  const signs = jwks.keys.some((k) => (k as { use?: unknown } | null)?.use === 'sig');
  return {
    jwks,
    warning: signs ? null : `${where} holds no receipt key (use "sig"); no receipt can verify against it.`,
  };
}

async function fetchText(url: string): Promise<string> {
  const unreachable = (why: string) =>
    new KeySetError(`cannot get the key set from ${url}: ${why}`, true, FETCH_FIX, 'unreachable');
  // undici only when the key set is at a URL: verifying against a file never loads it.
  const { request } = await import('undici');
  let res;
  try {
    res = await request(url, {
      method: 'GET',
      headers: { accept: 'application/json' },
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
  } catch (err) {
    throw unreachable((err as Error).message ?? String(err));
  }
  if (res.statusCode !== 200) {
    await res.body.dump().catch(() => undefined);
    throw unreachable(`HTTP ${res.statusCode}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_JWKS_BYTES) {
        res.body.destroy();
        throw unreachable('the answer is larger than 1 MB');
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    throw err instanceof KeySetError ? err : unreachable((err as Error).message ?? String(err));
  }
  return Buffer.concat(chunks).toString('utf8');
}
