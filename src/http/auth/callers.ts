import type { Request } from '@hapi/hapi';
import type { TableValue } from '../../store/index.js';

// The record shapes this piece handles, as the store's registry declares them (the domains own
// them in their records.ts, a layer above this one).
type AgentRecord = TableValue<'agents'>;
type KeyRecord = TableValue<'keys'>;
type ServiceTokenRecord = TableValue<'serviceTokens'>;

/**
 * The signed-in person as routes see them: the people domain's PublicUser. Declared here so that
 * src/http/ imports no domain; the compiler holds the two together, since the session strategy
 * takes the people service's users and routes hand this one back to its `authorize`.
 */
export interface SessionUser {
  id: string;
  email: string;
  name: string;
  /** The password was chosen by someone else (the first start's one-time password): change it. */
  mustChangePassword: boolean;
  /** Two-factor is on: sign-in asks for a code. */
  totp: boolean;
}

/** What the key strategies ask of the keys service: a key and an agent key's agent (undefined: unknown, expired or revoked). */
export interface KeyResolver {
  resolve(value: string): Promise<{ record: KeyRecord; agent?: AgentRecord | undefined } | undefined>;
}

/**
 * The five caller kinds of SPEC.md 5.1. Each route accepts exactly one; a strategy reads only its
 * own credential, so a credential of another kind on a route is never looked at.
 */
export type Caller =
  | { kind: 'agent'; workspaceId: string; agent: AgentRecord; key: KeyRecord }
  | { kind: 'workspace-key'; workspaceId: string; key: KeyRecord }
  | { kind: 'service-token'; workspaceId: string; token: ServiceTokenRecord }
  | { kind: 'session'; user: SessionUser; secret: string }
  | { kind: 'signature'; keyId: string };

export type CallerOf<K extends Caller['kind']> = Extract<Caller, { kind: K }>;

/** The authenticated caller of a route of kind K (the route's strategy guarantees the kind). */
export function caller<K extends Caller['kind']>(request: Request, kind: K): CallerOf<K> {
  const found = (request.auth.credentials as unknown as { caller?: Caller }).caller;
  if (!found || found.kind !== kind) throw new Error(`route expected a ${kind} caller`);
  return found as CallerOf<K>;
}

/** How the ledger names a caller. */
export function actorOf(c: Caller): string {
  switch (c.kind) {
    case 'agent':
      return `agent:${c.agent.id}`;
    case 'workspace-key':
      return `key:${c.key.id}`;
    case 'service-token':
      return `token:${c.token.name}`;
    case 'session':
      return `user:${c.user.id}`;
    case 'signature':
      return `system`;
  }
}

export function credentials(c: Caller): { caller: Caller } {
  return { caller: c };
}

/** Strategy names, as routes name them. */
export const AGENT_KEY = 'agent-key';
export const WORKSPACE_KEY = 'workspace-key';
export const SERVICE_TOKEN = 'service-token';
export const SESSION = 'session';
export const SESSION_HOST = 'session-host';
export const SIGNATURE = 'signature';

/** What each strategy expects, for the message of a 401 when nothing usable was sent. */
export const expectedCredential: Record<string, string> = {
  [AGENT_KEY]: 'an agent key (Authorization: Bearer ask_...)',
  [WORKSPACE_KEY]: 'a workspace key (Authorization: Bearer ask_... or x-api-key: ask_...)',
  [SERVICE_TOKEN]: 'a service token (Authorization: Bearer ims_...)',
  [SESSION]: 'a signed-in session (sign in with POST /api/session)',
  [SESSION_HOST]: 'a signed-in session (sign in with POST /api/session)',
  [SIGNATURE]: 'a signed request (svc-signature header)',
};
