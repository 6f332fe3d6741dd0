import type { Role } from './records.js';

/**
 * The one permission table for console routes (docs/console.md): owners and admins manage
 * everything; members manage agents that act for them; analysts read reports; auditors read
 * evidence. Every console route names one permission from here.
 */
export const permissions = {
  'workspace.read': ['owner', 'admin', 'member', 'analyst', 'auditor'],
  'keys.manage': ['owner', 'admin'],
  'service-tokens.manage': ['owner'],
  /** Creating another workspace (of which the creator is the owner): owners of a workspace. */
  'workspaces.create': ['owner'],
  'members.manage': ['owner', 'admin'],
  /** Lifting a member's lockout (too many wrong passwords or codes): owners, never for themselves. */
  'members.unlock': ['owner'],
  'ledger.read': ['owner', 'admin', 'auditor'],
  /** Agents that act for the caller; owners and admins: every agent. */
  'agents.manage': ['owner', 'admin', 'member'],
  /**
   * Who reads every agent of the workspace (auditors read evidence, and the ledger names every
   * agent with its holds). Everyone else with `workspace.read` sees only the agents that act for
   * them; any other agent is "not found" to them (404 not_found, as an agent of another workspace),
   * on reads and writes alike.
   */
  'agents.readAll': ['owner', 'admin', 'auditor'],
  'templates.manage': ['owner', 'admin'],
  /** The workspace's model gateway settings (enforcement, data-loss mode). */
  'gateway.manage': ['owner', 'admin'],
  /** The workspace's upstream MCP servers behind /mcp. */
  'mcp.manage': ['owner', 'admin'],
  /** Inbound integrations (signing secrets) and card mappings. */
  'integrations.manage': ['owner', 'admin'],
  /**
   * The identity provider (integration `ssf`): its keys sign events that end people's sessions and
   * memberships, so only an owner sets it up (an admin with keys of their own could otherwise act
   * on anyone's access).
   */
  'integrations.identityProvider': ['owner'],
  /**
   * The approval channels (integrations `slack` and `chat-relay`): whoever holds their secrets can
   * speak for any mapped chat user, so only an owner sets them up.
   */
  'integrations.approvalChannels': ['owner'],
  /**
   * AP2 (docs/ap2.md): the issuers whose mandates the workspace trusts, and importing a person's
   * open mandate as an agent's rules. Their keys speak for people's authority: owners only.
   */
  'ap2.manage': ['owner'],
  /** "Stop every agent" on and off. */
  'workspace.stopAll': ['owner', 'admin'],
  /** Read waiting approvals; deciding also passes the approval's own rules (approvers, duties). */
  'approvals.read': ['owner', 'admin', 'member'],
  'approvals.decide': ['owner', 'admin', 'member'],
  /** Reports: the model gateway's usage and spend over time, and budgets with their steps. */
  'usage.read': ['owner', 'admin', 'analyst'],
  /** The workspace's plan as billing reports it, and the allowances it is held to. */
  'plan.read': ['owner', 'admin'],
} as const satisfies Record<string, readonly Role[]>;

export type Permission = keyof typeof permissions;

export function roleAllows(role: Role, permission: Permission): boolean {
  return (permissions[permission] as readonly Role[]).includes(role);
}

export function rolesFor(permission: Permission): readonly Role[] {
  return permissions[permission];
}
