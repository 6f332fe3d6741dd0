import type { Store } from '../store/index.js';
import type { AgentSigningKeyRecord } from './records.js';

/**
 * The reads and writes of agents' request-signing keys: `agentSigningKeys`, [wid, aid, kid] ->
 * record. The only writer of that table. An agent's current key is its one key not retired.
 */
export function agentSigningRepo(store: Store) {
  const t = store.tables;
  return {
    /** Every key of one agent, current and retired. */
    async keysOf(wid: string, aid: string): Promise<AgentSigningKeyRecord[]> {
      return (await t.agentSigningKeys.scan([wid, aid])).map((e) => e.value);
    },
    /** Every key of every agent of every workspace (the directory is the deployment's). */
    async all(): Promise<AgentSigningKeyRecord[]> {
      return (await t.agentSigningKeys.scan([])).map((e) => e.value);
    },
    /** Only inside store.write(). */
    async put(record: AgentSigningKeyRecord): Promise<void> {
      await t.agentSigningKeys.put([record.workspaceId, record.agentId, record.kid], record);
    },
    /** Only inside store.write(): a key past its grace period leaves the store. */
    async remove(record: AgentSigningKeyRecord): Promise<void> {
      await t.agentSigningKeys.remove([record.workspaceId, record.agentId, record.kid]);
    },
  };
}
