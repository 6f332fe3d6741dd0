import { Flags } from '@oclif/core';
import { CliFailure, contextFlag, dataDirFlag, EXIT, storeFlag, urlFlag } from './base-command.js';
import { serverClient, type ServerClient } from './client.js';
import { resolveRemote } from './remote.js';

/**
 * Flags that several commands share, and the one way each gets its client: through the server
 * with a credential, or `--local` on the store (src/cli/local.ts).
 */
export const localFlags = {
  local: Flags.boolean({ description: 'work on the store directly instead of calling the server' }),
  workspace: Flags.string({ description: 'with --local: workspace id, when the store has several' }),
  'data-dir': dataDirFlag,
  store: storeFlag,
};

/** `--url`, `--context` and `--admin-key` (SVC_ADMIN_KEY): the key routes take an admin workspace key. */
export const adminKeyFlags = {
  url: urlFlag,
  context: contextFlag,
  'admin-key': Flags.string({ description: 'admin workspace key for the server', env: 'SVC_ADMIN_KEY' }),
};

/**
 * `--url`, `--context` and `--token` (SVC_TOKEN), a service token with the scope named; without a
 * token, the person signed in with svc login (the context's), with their role's permissions.
 */
export const tokenFlags = (scope: string) => ({
  url: urlFlag,
  context: contextFlag,
  token: Flags.string({
    description: `service token with scope ${scope} (default: your svc login sign-in)`,
    env: 'SVC_TOKEN',
  }),
});

export const reasonFlag = Flags.string({ description: 'why (kept with the hold and in the ledger)', required: true });

/** A service token (SVC_TOKEN), or an admin workspace key (SVC_ADMIN_KEY) for the key routes. */
export type Credential = 'token' | 'admin-key';
const NAMED = {
  token: 'service token (set SVC_TOKEN or --token) and no svc login sign-in for this server',
  'admin-key': 'admin key: set SVC_ADMIN_KEY (or --admin-key)',
};

/**
 * The client for a credential (the flag's, else the context's sign-in: remote.ts); without one, a
 * usage error that names the ways. The key routes take an admin key only, never a sign-in.
 */
export function tokenClient(
  flags: { url?: string | undefined; context?: string | undefined; token?: string | undefined },
  kind: Credential = 'token',
): ServerClient {
  const remote = resolveRemote(flags, flags.token, { useSignIn: kind === 'token' });
  if (!remote.bearer)
    throw new CliFailure(`no ${NAMED[kind]}, or use --local on the store`, {
      exit: EXIT.usage,
      type: 'unauthenticated',
      ...(kind === 'token'
        ? { fix: 'Sign in with svc login --url URL, set SVC_TOKEN to a service token, or use --local on the store.' }
        : {}),
    });
  return serverClient(remote.url, remote.bearer);
}

/** A command (or a form of one) that only the operator on the store may run. */
export function localOnly(what: string, why: string): never {
  throw new CliFailure(`${what} works only with --local: ${why}`, {
    exit: EXIT.usage,
    type: 'local_only',
    fix: 'Run it with --local on the machine that holds the store (--data-dir), or do it in the console.',
  });
}

/** A reason that says something: trimmed, and not empty. */
export function reasonOf(reason: string): string {
  const trimmed = reason.trim();
  if (trimmed === '')
    throw new CliFailure('--reason must say why', {
      exit: EXIT.usage,
      type: 'reason_required',
      fix: 'Pass --reason with a few words on why; it is kept in the ledger.',
    });
  return trimmed;
}

/** "1 agent", "3 agents". */
export const agents = (n: number) => `${n} agent${n === 1 ? '' : 's'}`;
