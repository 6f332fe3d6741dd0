import { bumpGeneration } from '../store/generations.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { ApprovalRecord } from '../approvals/records.js';
import type { StopAllRecord } from './records.js';

/**
 * The kill switch's reads and writes: agents' holds (on the agent records), "stop every agent"
 * (one record per workspace) and a token's freeze waiting for a person (an approval of its own).
 * What else a stop ends (OAuth connections) is the PrincipalEnded hooks' (lib/principal-ended.ts).
 */
export function killSwitchRepo(store: Store) {
  const t = store.tables;
  return {
    agent(wid: string, aid: string): Promise<AgentRecord | undefined> {
      return t.agents.get([wid, aid]);
    },
    async agents(wid: string): Promise<AgentRecord[]> {
      return (await t.agents.scan([wid])).map((e) => e.value);
    },
    /** Only inside store.write(). Bumps the `keys` generation: the keys service caches an agent key's agent (holds included) with the key. */
    async putAgent(agent: AgentRecord): Promise<void> {
      await t.agents.put([agent.workspaceId, agent.id], agent);
      await bumpGeneration(t, 'keys');
    },
    stopAll(wid: string): Promise<StopAllRecord | undefined> {
      return t.stopAll.get(wid);
    },
    /** Only inside store.write(). */
    putStopAll(wid: string, record: StopAllRecord): Promise<void> {
      return t.stopAll.put(wid, record);
    },
    /** Only inside store.write(). */
    removeStopAll(wid: string): Promise<void> {
      return t.stopAll.remove(wid);
    },
    /** A pending approval and its place in the expiry index. Only inside store.write(). */
    async putPendingApproval(approval: ApprovalRecord): Promise<void> {
      await t.approvals.put([approval.workspaceId, approval.id], approval);
      await t.pendingApprovals.put([approval.expiresAt, approval.workspaceId, approval.id], true);
    },
  };
}
