import type { Store } from '../../store/index.js';
import type { AgentRecord } from '../../agents/records.js';
import type { McpCredentialKind, McpCredentialRecord, McpOAuthPendingRecord } from '../records.js';

/** The upstream credentials' reads and writes (mcp/upstream-auth.ts). Writes only inside store.write(). */
export function mcpCredentialsRepo(store: Store) {
  const t = store.tables;
  return {
    async agent(wid: string, aid: string): Promise<AgentRecord | undefined> {
      return t.agents.get([wid, aid]);
    },
    async get(wid: string, server: string, holder: string, kind: McpCredentialKind) {
      return t.mcpCredentials.get([wid, server, holder, kind]);
    },
    /** One holder's credentials of one upstream server (each kind), in one read. */
    async holder(wid: string, server: string, holder: string): Promise<McpCredentialRecord[]> {
      return (await t.mcpCredentials.scan([wid, server, holder])).map((e) => e.value);
    },
    /** Every credential of one upstream server, by holder then kind. */
    async of(wid: string, server: string): Promise<McpCredentialRecord[]> {
      return (await t.mcpCredentials.scan([wid, server])).map((e) => e.value);
    },
    async put(c: McpCredentialRecord): Promise<void> {
      await t.mcpCredentials.put([c.workspaceId, c.server, c.holder, c.kind], c);
    },
    async remove(wid: string, server: string, holder: string, kind: McpCredentialKind): Promise<boolean> {
      if (!(await t.mcpCredentials.has([wid, server, holder, kind]))) return false;
      await t.mcpCredentials.remove([wid, server, holder, kind]);
      return true;
    },
    /** Removes every credential of a server (it was removed). */
    async removeAll(wid: string, server: string): Promise<void> {
      for (const e of await t.mcpCredentials.scan([wid, server])) await t.mcpCredentials.remove(e.key);
    },
    async pending(stateHash: string): Promise<McpOAuthPendingRecord | undefined> {
      return t.mcpOAuthPending.get(stateHash);
    },
    async putPending(stateHash: string, p: McpOAuthPendingRecord): Promise<void> {
      await t.mcpOAuthPending.put(stateHash, p);
    },
    async removePending(stateHash: string): Promise<void> {
      await t.mcpOAuthPending.remove(stateHash);
    },
  };
}

/** The upstream credentials' reads and writes, as its users name them. */
export type McpCredentialsRepo = ReturnType<typeof mcpCredentialsRepo>;
