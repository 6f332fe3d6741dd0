import { evaluate, nameMatches } from '../mandates/evaluate.js';
import type { MandateRule } from '../mandates/records.js';
import type { McpServerRecord } from './records.js';

/**
 * What an agent is shown of the upstreams (issue 20 item 6): only what its mandate could allow.
 * Rules:
 * - A proxied call is the action `mcp.<server>.<tool>` on the upstream's host (a local server's:
 *   `local`) (`actionOf`, the one
 *   definition the gate is asked with). It carries no amount and no merchant, so the mandate's
 *   answer depends on nothing else: a tool is listed exactly when the gate would not deny its
 *   call (allowed, or waiting for a person).
 * - Prompts are not actions and the gate is not asked for them; they belong to their server. An
 *   agent is offered a server's prompts (listed, got, completed) when its mandate could allow some
 *   action on that server (`mcp.<server>.…` on its host), and none of a server it has no cover on.
 * - The gate's own tools are always listed (narrowing is for the upstreams').
 */

/** A tool name as one segment of an action type (letters, digits, _ and -). */
export const segment = (tool: string) => tool.replace(/[^A-Za-z0-9_-]/g, '_');

/** The domain of every local server's actions (a stdio server of the configuration has no host). */
export const LOCAL_DOMAIN = 'local';

/** The gate action of a proxied call. */
export function actionOf(server: McpServerRecord, tool: string): { type: string; domain: string } {
  const domain = server.kind === 'local' ? LOCAL_DOMAIN : new URL(server.url).hostname;
  return { type: `mcp.${server.name}.${segment(tool)}`, domain };
}

/** Whether the gate could ever allow (or send for approval) a call of `tool` under these rules. */
export function mayCall(rules: readonly MandateRule[], server: McpServerRecord, tool: string, nowMs: number): boolean {
  const { type, domain } = actionOf(server, tool);
  return (
    evaluate(rules, { type, domain, amount: null, currency: null, merchant: null }, () => 0, nowMs).decision !== 'deny'
  );
}

/** Whether some action `mcp.<server>.…` on the server's host could be allowed under these rules. */
export function mayUseServer(rules: readonly MandateRule[], server: McpServerRecord): boolean {
  const { domain } = actionOf(server, '');
  const prefix = `mcp.${server.name}.`;
  // A tool's type is the prefix and one segment without dots (server names have none either).
  const coversSome = (pattern: string) =>
    pattern === '*' ||
    (pattern.endsWith('.*')
      ? prefix.startsWith(pattern.slice(0, -1))
      : pattern.startsWith(prefix) && /^[A-Za-z0-9_-]+$/.test(pattern.slice(prefix.length)));
  return rules.some(
    (r) => r.actions.some(coversSome) && nameMatches(r.merchants, null) && nameMatches(r.domains, domain),
  );
}
