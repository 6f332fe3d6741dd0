import { bumpGeneration } from '../store/generations.js';
import type { Store } from '../store/index.js';
import type { AgentRecord, StopAllRecord } from './records.js';

/**
 * Agent records: this repo is their only writer (the kill switch changes holds through the agents
 * service's `setHoldsInWrite`). Also reads members and "stop every agent" for the agents' views.
 */
export interface AgentsRepo {
  get(wid: string, aid: string): Promise<AgentRecord | undefined>;
  /** Only inside store.write(). Also bumps the `keys` generation: the keys service caches an agent key's agent with the key. */
  put(agent: AgentRecord): Promise<void>;
  /** The workspace's agents (removed ones too), in id order. */
  list(wid: string, options?: { after?: string; limit?: number }): Promise<AgentRecord[]>;
  /** Whether a person is a member of the workspace (an agent may act only for one). */
  isMember(wid: string, userId: string): Promise<boolean>;
  /** "Stop every agent" for the workspace, when in force (shown on every agent's view). */
  stopAll(wid: string): Promise<StopAllRecord | undefined>;
}

export function agentsRepo(store: Store): AgentsRepo {
  const t = store.tables;
  return {
    get(wid, aid) {
      return t.agents.get([wid, aid]);
    },
    async put(agent) {
      await t.agents.put([agent.workspaceId, agent.id], agent);
      await bumpGeneration(t, 'keys');
    },
    async list(wid, options = {}) {
      return (await t.agents.scan([wid], options)).map((e) => e.value);
    },
    isMember(wid, userId) {
      return t.members.has([wid, userId]);
    },
    stopAll(wid) {
      return t.stopAll.get(wid);
    },
  };
}
