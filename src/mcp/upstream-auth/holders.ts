/**
 * Who holds an upstream credential: an agent, or the workspace (stored as WORKSPACE_HOLDER).
 */
export const WORKSPACE_HOLDER = '*workspace';

export type Holder = { agentId: string } | { workspace: true };

/** The `error.data.type` of svc's own verdicts on an upstream's 401 (this holder has no credential, or it was refused). */
export const CREDENTIAL_PROBLEMS: ReadonlySet<string> = new Set([
  'upstream_not_connected',
  'upstream_reconnect_needed',
  'upstream_credential_refused',
]);

export const holderId = (h: Holder): string => ('agentId' in h ? h.agentId : WORKSPACE_HOLDER);
export const holderOf = (id: string): Holder => (id === WORKSPACE_HOLDER ? { workspace: true } : { agentId: id });

/** A credential's holder as an error names it. */
export const named = (holder: string): string => (holder === WORKSPACE_HOLDER ? 'the workspace' : `agent ${holder}`);
