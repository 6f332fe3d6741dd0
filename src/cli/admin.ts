import type { AgentView } from '../agents/index.js';
import type { ApprovalView } from '../approvals/service.js';
import type { KeyView, MintKeyInput } from '../keys/index.js';
import type { FreezeAnswer, PendingFreeze, Selector, StopAllState } from '../killswitch/index.js';
import type { CreateTokenInput, ServiceTokenView } from '../service-tokens/index.js';
import type { AgentWithRules, MintedKey } from './client.js';
import { localOnly, tokenClient, type Credential } from './flags.js';

/**
 * What the operator's commands do, the same whichever way they go: through the server (the typed
 * client, with a service token or an admin key) or `--local` on the store (the domain services,
 * as the operator: actor `operator:cli`, hold `owner`, as Stop in the console). Every method
 * returns the type the domain exports. Lifting holds, "stop every agent" off and service tokens
 * are the operator's acts only: through the server they are usage errors (no token lifts a
 * freeze: a person or the operator does; a token is an owner's to mint).
 */
export interface Admin {
  createAgent(input: AgentRequest): Promise<AgentWithRules>;
  listAgents(query: { tag?: string | undefined; status?: string | undefined }): Promise<AgentView[]>;
  stopAgent(aid: string, reason: string): Promise<AgentView>;
  restartAgent(aid: string): Promise<AgentView>;
  freeze(selector: Selector, reason: string, confirmCount?: number): Promise<FreezeAnswer>;
  stopAllOn(reason: string): Promise<StopAllState | PendingFreeze>;
  stopAllOff(): Promise<StopAllState>;
  stopAllStatus(): Promise<StopAllState>;
  listApprovals(): Promise<ApprovalView[]>;
  listKeys(): Promise<KeyView[]>;
  revokeKey(id: string): Promise<void>;
  mintKey(input: MintKeyInput): Promise<MintedKey>;
  createToken(input: CreateTokenInput): Promise<ServiceTokenView & { token: string }>;
  listTokens(): Promise<ServiceTokenView[]>;
  revokeToken(id: string): Promise<void>;
}

/** An agent to register: from a blueprint (required through the server), templates, tags. */
export interface AgentRequest {
  name: string;
  blueprint?: string;
  actsFor?: string;
  tags?: string[];
  templates?: string[];
}

function remoteAdmin(
  flags: { url?: string | undefined; context?: string | undefined; token?: string | undefined },
  kind: Credential,
): Admin {
  const lifts = () =>
    localOnly(
      'lifting a hold',
      'no service token lifts a freeze: only a person in the console or the operator on the store does',
    );
  const owners = () => localOnly('svc tokens', "a service token is an owner's to mint, list and revoke");
  const client = () => tokenClient(flags, kind);
  return {
    createAgent: (input) => client().agents.create(input),
    listAgents: (q) => client().agents.list(q),
    stopAgent: (aid, reason) => client().agents.stop(aid, reason),
    restartAgent: async () => lifts(),
    freeze: (selector, reason, confirmCount) => client().freeze(selector, reason, confirmCount),
    stopAllOn: (reason) => client().stopAll.on(reason),
    stopAllOff: async () => lifts(),
    stopAllStatus: () => client().stopAll.status(),
    listApprovals: () => client().approvals.list(),
    listKeys: () => client().keys.list(),
    revokeKey: (id) => client().keys.revoke(id),
    mintKey: (input) => client().keys.mint(input),
    createToken: async () => owners(),
    listTokens: async () => owners(),
    revokeToken: async () => owners(),
  };
}

/**
 * Runs `fn` with the operator's commands, `--local` on the store or through the server at `--url`
 * with `credential` (SVC_TOKEN, or SVC_ADMIN_KEY for the key routes). `readOnly`: a `--local` command
 * that only reads works on a read-only copy of the store.
 */
export async function withAdmin<T>(
  flags: {
    local?: boolean | undefined;
    url?: string | undefined;
    context?: string | undefined;
    'data-dir'?: string | undefined;
    store?: string | undefined;
    workspace?: string | undefined;
  },
  credential: string | undefined,
  fn: (admin: Admin) => Promise<T>,
  kind: Credential = 'token',
  options: { readOnly?: boolean } = {},
): Promise<T> {
  if (flags.local) {
    // The app and the domains load only here: a command through the server never loads them.
    const [{ withLocal }, { localAdmin }] = await Promise.all([import('./local.js'), import('./local-admin.js')]);
    return withLocal(flags, (services, wid) => fn(localAdmin(services, wid)), options);
  }
  return fn(remoteAdmin({ url: flags.url, context: flags.context, token: credential }, kind));
}
