import type { AgentRecord, Store } from '../store/index.js';

/** Agent records. The gate issue adds mandates and standing; keys already bind to agents here. */
export function agentsRepo(store: Store) {
  const t = store.tables;
  return {
    get(wid: string, aid: string): AgentRecord | undefined {
      return t.agents.get([wid, aid]);
    },
    put(agent: AgentRecord): void {
      t.agents.put([agent.workspaceId, agent.id], agent);
    },
    list(wid: string, options: { after?: string; limit?: number } = {}): AgentRecord[] {
      return t.agents.scan([wid], options).map((e) => e.value);
    },
  };
}
