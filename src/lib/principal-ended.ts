/**
 * What ends with a principal, declared once: when an agent is stopped or removed (or every agent
 * of a workspace is stopped), or a person leaves a workspace or loses access there, the other
 * domains' grants that speak for them end in the same write, so none works a moment longer: the
 * OAuth connections they hold (oauth/), a person's chat identities (chat/) and command-line sign-ins
 * (oauth/device/).
 *
 * The domains that end principals (agents, killswitch, people) are given these hooks by app.ts
 * and call them inside their own store.write(); they import neither oauth nor chat, and each of
 * those tables stays written by its own domain's repo.
 */
export interface PrincipalEnded {
  /** Inside the caller's write: the agent named by `match` (or every agent) stopped or was removed. */
  agent(wid: string, match: { agentId: string } | { all: true }, why: string, nowMs: number): Promise<void>;
  /** Inside the caller's write: the person's grants in the workspace end. */
  person(
    wid: string,
    uid: string,
    why: string,
    nowMs: number,
  ): Promise<{ connectionsEnded: number; chatMappingsEnded: number }>;
  /**
   * Inside the caller's write: the person's password changed or was reset, so whatever they
   * signed in with before ends in every workspace (their command-line sign-ins).
   */
  credentialsChanged(uid: string, why: string, nowMs: number): Promise<void>;
}
