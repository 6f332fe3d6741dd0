import type { AgentRecord, Hold, StopAllRecord, Store } from '../store/index.js';

/**
 * The one standing check every enforcement point uses (the gate now; the model gateway and the
 * MCP proxy later). Rules:
 * - An agent is stopped while it has any hold, or while "stop every agent" is in force for its
 *   workspace; a removed or unknown agent is stopped too.
 * - Standing is read from the store at each call, never remembered: a hold written by another
 *   process (`svc freeze --local`) stops the very next request. Inside a store.write() it reads
 *   the state that transaction commits against.
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

export function readStanding(store: Store, wid: string, aid: string): Standing {
  return standingOf(store.tables.agents.get([wid, aid]), store.tables.stopAll.get(wid));
}
