import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { KeyRecord } from '../keys/records.js';
import type { McpServerRecord, McpToolPinRecord } from './records.js';
import type { OAuthConnectionRecord } from '../oauth/records.js';

/** The MCP domain's reads and writes (upstream servers, pins, sessions' credentials). Writes only inside store.write(). */
export function pinsRepo(store: Store) {
  const t = store.tables;
  return {
    async pin(wid: string, server: string, tool: string): Promise<McpToolPinRecord | undefined> {
      return t.mcpToolPins.get([wid, server, tool]);
    },
    /** Every pin of one upstream server, by tool name. */
    async pinsOf(wid: string, server: string): Promise<McpToolPinRecord[]> {
      return (await t.mcpToolPins.scan([wid, server])).map((e) => e.value);
    },
    async putPin(p: McpToolPinRecord): Promise<void> {
      await t.mcpToolPins.put([p.workspaceId, p.server, p.tool], p);
    },
    /** Removes every pin of a server (it was removed: adding it again pins afresh). */
    async removePins(wid: string, server: string): Promise<void> {
      for (const e of await t.mcpToolPins.scan([wid, server])) await t.mcpToolPins.remove(e.key);
    },
  };
}

/** The upstream MCP servers of a workspace (mcp/proxy.ts). Writes only inside store.write(). */
export function mcpServersRepo(store: Store) {
  const t = store.tables;
  return {
    async get(wid: string, name: string): Promise<McpServerRecord | undefined> {
      return t.mcpServers.get([wid, name]);
    },
    async has(wid: string, name: string): Promise<boolean> {
      return t.mcpServers.has([wid, name]);
    },
    /** Every server of a workspace, by name. */
    async list(wid: string): Promise<McpServerRecord[]> {
      return (await t.mcpServers.scan([wid])).map((e) => e.value);
    },
    async put(server: McpServerRecord): Promise<void> {
      await t.mcpServers.put([server.workspaceId, server.name], server);
    },
    async remove(wid: string, name: string): Promise<void> {
      await t.mcpServers.remove([wid, name]);
    },
  };
}

/** The upstream servers' reads and writes, as their users name them. */
export type McpServersRepo = ReturnType<typeof mcpServersRepo>;

/** What an MCP session's credential check reads (mcp/sessions.ts): the agent, its key or its OAuth connection. */
export function sessionCredentialsRepo(store: Store) {
  const t = store.tables;
  return {
    async agent(wid: string, aid: string): Promise<AgentRecord | undefined> {
      return t.agents.get([wid, aid]);
    },
    async key(wid: string, id: string): Promise<KeyRecord | undefined> {
      return t.keys.get([wid, id]);
    },
    async connection(wid: string, id: string): Promise<OAuthConnectionRecord | undefined> {
      return t.oauthConnections.get([wid, id]);
    },
  };
}
