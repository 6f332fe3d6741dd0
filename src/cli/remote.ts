import { CliFailure, EXIT } from './base-command.js';
import { chosenContext, openTokens, saveContext, sealTokens, type StoredContext } from './contexts.js';
import { refreshTokens } from './device-login.js';

/**
 * Which server a command talks to and with what credential. In order:
 * - the server: `--url` (or SVC_URL), else the context's (`--context`, SVC_CONTEXT, else the
 *   current one), else http://127.0.0.1:8080;
 * - the credential: the flag or environment variable the command takes (`--token`/SVC_TOKEN,
 *   `--admin-key`/SVC_ADMIN_KEY), else the context's sign-in (svc login), but only when the server
 *   is the context's own: a person's token is never sent to another server.
 * A sign-in's access token is refreshed before it expires (within REFRESH_EARLY_MS) and once more
 * when the server answers token_expired; the new pair is sealed back into the context.
 */
export const DEFAULT_URL = 'http://127.0.0.1:8080';
const REFRESH_EARLY_MS = 30_000;

/** A person's sign-in as the HTTP client uses it: the access token, and a refresh when it expired. */
export interface SignedIn {
  kind: 'signed-in';
  context: string;
  get(): Promise<string>;
  refresh(): Promise<string>;
}

export type Bearer = string | SignedIn;

const sameServer = (a: string, b: string) => {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
};

export function signedIn(name: string, stored: StoredContext): SignedIn {
  let context = stored;
  let tokens = openTokens(name, context);
  const renew = async (): Promise<string> => {
    if (!tokens)
      throw new CliFailure(`the sign-in of context ${name} cannot be read here`, {
        exit: EXIT.false,
        type: 'unauthenticated',
        fix: `Run svc login --url ${context.url} --name ${name} again.`,
      });
    const pair = await refreshTokens(context.url, tokens.refresh);
    tokens = { access: pair.access, refresh: pair.refresh };
    context = {
      ...context,
      accessExpiresAt: new Date(Date.now() + pair.expiresIn * 1000).toISOString(),
      sealed: sealTokens(name, context.url, tokens),
    };
    saveContext(name, context, false);
    return tokens.access;
  };
  return {
    kind: 'signed-in',
    context: name,
    async get() {
      if (tokens && Date.parse(context.accessExpiresAt) - REFRESH_EARLY_MS > Date.now()) return tokens.access;
      return renew();
    },
    refresh: renew,
  };
}

/** The server and credential for a command; `credential` is what its flag or variable gave. */
export function resolveRemote(
  flags: { url?: string | undefined; context?: string | undefined },
  credential: string | undefined,
  options: { useSignIn?: boolean } = {},
): { url: string; bearer: Bearer | undefined; context: string | null } {
  // A script's token and server, given both: the contexts are not read at all (nor can a broken file stop it).
  if (credential && flags.url) return { url: flags.url, bearer: credential, context: null };
  const chosen = chosenContext(flags.context);
  const url = flags.url ?? chosen?.context.url ?? DEFAULT_URL;
  if (credential) return { url, bearer: credential, context: chosen?.name ?? null };
  if (chosen && options.useSignIn !== false && sameServer(chosen.context.url, url))
    return { url, bearer: signedIn(chosen.name, chosen.context), context: chosen.name };
  return { url, bearer: undefined, context: chosen?.name ?? null };
}
