import type { Store } from '../store/index.js';
import type { AgentRecord, Hold } from './records.js';
import type { StopAllRecord } from './records.js';
import { agentsRepo } from './repo.js';

/**
 * The one standing check every enforcement point uses (the gate, the model gateway, the MCP proxy,
 * OAuth grants, approvals). Agents own it: the kill switch sets holds (through the agents'
 * `setHoldsInWrite`) and writes "stop every agent", and every reader asks here. Rules:
 * - An agent is stopped while it has any hold, or while "stop every agent" is in force for its
 *   workspace; a removed or unknown agent is stopped too.
 * - Standing is read from the store at each call, never remembered: a hold written by another
 *   process (`svc freeze --local`) stops the very next request. Inside a store.write() it reads
 *   the state that transaction commits against.
 * - It is read on every request: two store reads (the agent and its workspace's stop-all), made
 *   at once.
 */
export type Standing =
  { stopped: false } | { stopped: true; hold: string; reason: string; stoppedBy: 'agent' | 'workspace' };

export function standingOf(agent: AgentRecord | undefined, stopAll: StopAllRecord | undefined): Standing {
  if (!agent || agent.removedAt)
    return { stopped: true, hold: 'removed', reason: 'the agent was removed', stoppedBy: 'agent' };
  const hold: Hold | undefined = agent.holds?.[0];
  if (hold) return { stopped: true, hold: hold.hold, reason: hold.reason, stoppedBy: 'agent' };
  if (stopAll) return { stopped: true, hold: 'workspace', reason: stopAll.reason, stoppedBy: 'workspace' };
  return { stopped: false };
}

export async function readStanding(store: Store, wid: string, aid: string): Promise<Standing> {
  const repo = agentsRepo(store);
  const [agent, stopAll] = await Promise.all([repo.get(wid, aid), repo.stopAll(wid)]);
  return standingOf(agent, stopAll);
}
