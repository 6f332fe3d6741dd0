import type { McpServerRecord } from '../records.js';
import type { McpServerView, ProxyCaller } from './types.js';

/**
 * How the proxy names what it offers and keys what it keeps: a tool or prompt is exposed as
 * `<server>__<name>`, or as its own name when its server is set unprefixed; a server's key
 * includes when it was added, so a server removed and added again under its name is another.
 */

/** A tool's or prompt's name as the caller sees it. */
export const exposed = (server: McpServerRecord, tool: string): string =>
  server.unprefixed ? tool : `${server.name}__${tool}`;

/** The prefixed upstream an exposed name (of a tool or prompt) belongs to, and the name upstream. */
export const prefixedOwner = (
  servers: McpServerRecord[],
  name: string,
): { server: McpServerRecord; inner: string } | undefined => {
  const server = servers.find((s) => !s.unprefixed && name.startsWith(`${s.name}__`));
  return server ? { server, inner: name.slice(server.name.length + 2) } : undefined;
};

/** Whether a server's tool allow-list lets this tool through (null: every tool). */
export const allowed = (server: McpServerRecord, tool: string): boolean =>
  server.allowTools === null || server.allowTools.includes(tool);

export const serverKey = (server: McpServerRecord): string =>
  `${server.workspaceId}/${server.name}/${server.createdAt}`;
export const agentKey = (who: ProxyCaller): string => `${who.workspaceId}/${who.agentId}`;

/** A server as the console and the API show it (its secret only as whether it has one). */
export function serverView({ secretSealed, url, kind, enabled, ...rest }: McpServerRecord): McpServerView {
  return {
    ...rest,
    ...(kind === 'local' ? { kind } : { url, kind: 'remote' as const }),
    enabled: enabled !== false,
    hasSecret: secretSealed !== null,
  };
}
