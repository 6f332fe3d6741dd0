import type { StopAllRecord } from './records.js';
import { roleAllows } from '../people/permissions.js';
import type { Role } from '../people/records.js';
import type { AgentRecord, Hold } from './records.js';
import { standingOf } from './standing.js';

/** An agent as people and machines see it over the API. */
export interface AgentView {
  id: string;
  name: string;
  actsFor: string | null;
  tags: string[];
  status: 'running' | 'stopped';
  holds: Hold[];
  /** The blueprint the agent was registered from, or null. */
  blueprint: string | null;
  createdAt: string;
}

/**
 * An agent as people see it. Its standing is the one the gate enforces (agents/standing.ts):
 * while "stop every agent" is in force the agent shows stopped, with that stop as a `workspace`
 * hold (shown, never stored on the agent).
 */
export function toAgentView(a: AgentRecord, stopAll?: StopAllRecord): AgentView {
  const holds = [
    ...(a.holds ?? []),
    ...(stopAll ? [{ hold: 'workspace', reason: stopAll.reason, by: stopAll.by, at: stopAll.at }] : []),
  ];
  return {
    id: a.id,
    name: a.name,
    actsFor: a.actsFor,
    tags: a.tags,
    status: standingOf(a, stopAll).stopped ? 'stopped' : 'running',
    holds,
    blueprint: a.blueprint ?? null,
    createdAt: a.createdAt,
  };
}

/** A signed-in person reading agents: who they are and their role in the workspace. */
export interface AgentViewer {
  userId: string;
  role: Role;
}

/** Whether a person sees an agent at all (owners, admins, auditors: every agent; others: their own). */
export const sees = (agent: AgentRecord, viewer: AgentViewer): boolean =>
  roleAllows(viewer.role, 'agents.readAll') || agent.actsFor === viewer.userId;
