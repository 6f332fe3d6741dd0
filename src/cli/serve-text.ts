import { resolve } from 'node:path';
import { isSea } from 'node:sea';
import type { Listening } from './serving.js';

/** What `svc serve --json` prints once it listens: the address, and the first start's owner if this start made one. */
export function listeningJson({ address, metricsUrl, boot }: Listening): Record<string, unknown> {
  return {
    listening: address,
    ...(metricsUrl ? { metrics: metricsUrl } : {}),
    ...(boot ? { workspaceId: boot.workspaceId, owner: { email: boot.email, password: boot.password } } : {}),
  };
}

/**
 * What `svc serve` prints on a terminal when this start made the first workspace's owner (nothing
 * otherwise): where to sign in, as a whole URL of the bound address (a wildcard host, which no
 * browser can open, as the machine itself), the password, and the command that prints a new one,
 * as this install runs it (`npx svc` from a checkout, `svc` for the single executable) with the
 * data dir it must be given (and, on PostgreSQL, a reminder of the store URL, never the URL itself:
 * it may hold a password).
 */
export function firstStartText(
  { address, boot }: Listening,
  { dataDir, storeUrl = null }: { dataDir: string; storeUrl?: string | null },
): string | null {
  if (!boot) return null;
  const svc = isSea() ? 'svc' : 'npx svc';
  const store = storeUrl !== null && /^postgres(ql)?:/i.test(storeUrl) ? ' --store <the same store URL>' : '';
  return [
    '',
    `  Workspace "Default" created (${boot.workspaceId}).`,
    `  Owner: ${boot.email}`,
    `  One-time password: ${boot.password}`,
    `  Sign in at ${signInUrl(address)} and choose your own: it is shown this once and stored only as a hash.`,
    `  Lost it? \`${svc} owner reset-password --email ${boot.email} --local --data-dir ${shellWord(resolve(dataDir))}${store}\` prints a new one.`,
    '',
  ].join('\n');
}

/** The console's sign-in page at the bound address; 0.0.0.0 and :: (every interface) read as this machine. */
export function signInUrl(address: string): string {
  const url = new URL('/login', address);
  if (url.hostname === '0.0.0.0') url.hostname = '127.0.0.1';
  if (url.hostname === '[::]') url.hostname = '[::1]';
  return url.toString();
}

/** A path as one shell word: as it is when it holds nothing a shell would read, else single-quoted. */
function shellWord(path: string): string {
  return /^[\w./@:+-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}
