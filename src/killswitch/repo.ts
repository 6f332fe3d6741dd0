import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { StopAllRecord } from './records.js';

/**
 * The kill switch's reads and writes: "stop every agent" (one record per workspace), which this
 * repo alone writes, and the agents it reads. An agent's holds are written through the agents'
 * contract (`AgentHolds`), a token's freeze waiting for a person through the approvals'
 * (`ApprovalOpener`), and what else a stop ends (OAuth connections) through the PrincipalEnded
 * hooks (lib/principal-ended.ts). Writes only inside store.write().
 */
export interface KillSwitchRepo {
  agent(wid: string, aid: string): Promise<AgentRecord | undefined>;
  agents(wid: string): Promise<AgentRecord[]>;
  stopAll(wid: string): Promise<StopAllRecord | undefined>;
  putStopAll(wid: string, record: StopAllRecord): Promise<void>;
  removeStopAll(wid: string): Promise<void>;
}

export function killSwitchRepo(store: Store): KillSwitchRepo {
  const t = store.tables;
  return {
    agent(wid, aid) {
      return t.agents.get([wid, aid]);
    },
    async agents(wid) {
      return (await t.agents.scan([wid])).map((e) => e.value);
    },
    stopAll(wid) {
      return t.stopAll.get(wid);
    },
    putStopAll(wid, record) {
      return t.stopAll.put(wid, record);
    },
    removeStopAll(wid) {
      return t.stopAll.remove(wid);
    },
  };
}
