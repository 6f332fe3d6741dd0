import type { Role } from '../../people/records.js';
import { permissions, type Permission } from '../../people/permissions.js';
import type { ServiceTokenScope } from '../../service-tokens/records.js';

/**
 * What a person signed in to the command line (`svc login`) may do on the machine routes, which
 * name a service token scope each. A person's token carries no scopes of its own: the person's
 * role in the workspace, read from the store at every request, decides.
 * Rules:
 * - Never more than the console: each scope names the console permission it stays within, and the
 *   roles allowed here are a subset of that permission's (checked below when this module loads, and
 *   by test/oauth/device-properties.test.ts).
 * - Where the console narrows what a role sees or does (a member reads and stops only the agents
 *   that act for them, and reads only the approvals that wait for them), the machine routes, which
 *   answer for the whole workspace, are refused to that role instead.
 */
export const PERSON_SCOPES: Readonly<Record<ServiceTokenScope, { within: Permission; roles: readonly Role[] }>> = {
  'agents:read': { within: 'agents.readAll', roles: ['owner', 'admin', 'auditor'] },
  'agents:write': { within: 'agents.manage', roles: ['owner', 'admin'] },
  'agents:freeze': { within: 'workspace.stopAll', roles: ['owner', 'admin'] },
  'approvals:read': { within: 'approvals.read', roles: ['owner', 'admin'] },
  'evidence:read': { within: 'ledger.read', roles: ['owner', 'admin', 'auditor'] },
  'mcp:read': { within: 'mcp.manage', roles: ['owner', 'admin'] },
  'mcp:write': { within: 'mcp.manage', roles: ['owner', 'admin'] },
  // A workspace file names integrations, some of which only an owner sets up in the console.
  'setup:read': { within: 'templates.manage', roles: ['owner', 'admin'] },
  'setup:write': { within: 'integrations.identityProvider', roles: ['owner'] },
};

for (const [scope, { within, roles }] of Object.entries(PERSON_SCOPES)) {
  const allowed = permissions[within] as readonly Role[];
  const wider = roles.filter((r) => !allowed.includes(r));
  if (wider.length > 0) throw new Error(`person scope ${scope} allows ${wider.join(', ')} beyond ${within}`);
}

/** The roles that may use a route needing `scope` (none: every member of the workspace). */
export function rolesForScope(scope: ServiceTokenScope | undefined): readonly Role[] | null {
  return scope === undefined ? null : PERSON_SCOPES[scope].roles;
}
