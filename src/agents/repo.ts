import { bumpGeneration } from '../store/generations.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from './records.js';
import type { StopAllRecord } from '../killswitch/records.js';

/**
 * Agent records: this repo is their only writer (the kill switch changes holds through the agents
 * service's `setHoldsInWrite`). Also reads members and "stop every agent" for the agents' views.
 */
export function agentsRepo(store: Store) {
  const t = store.tables;
  return {
    get(wid: string, aid: string): Promise<AgentRecord | undefined> {
      return t.agents.get([wid, aid]);
    },
    /** Also bumps the `keys` generation: the keys service caches an agent key's agent with the key. */
    async put(agent: AgentRecord): Promise<void> {
      await t.agents.put([agent.workspaceId, agent.id], agent);
      await bumpGeneration(t, 'keys');
    },
    async list(wid: string, options: { after?: string; limit?: number } = {}): Promise<AgentRecord[]> {
      return (await t.agents.scan([wid], options)).map((e) => e.value);
    },
    /** Whether a person is a member of the workspace (an agent may act only for one). */
    isMember(wid: string, userId: string): Promise<boolean> {
      return t.members.has([wid, userId]);
    },
    /** "Stop every agent" for the workspace, when in force (shown on every agent's view). */
    stopAll(wid: string): Promise<StopAllRecord | undefined> {
      return t.stopAll.get(wid);
    },
  };
}
