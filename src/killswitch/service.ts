import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Ledger } from '../ledger/service.js';
import type { AgentRecord, Role, StopAllRecord, Store } from '../store/index.js';
import { readStanding, type Standing } from './standing.js';

/**
 * The kill switch (SPEC.md 1.3, 3 agent rows; API.md 2).
 * Rules:
 * - Stopping an agent adds a hold: `owner` from the console and from `svc freeze --local` (the
 *   same hold; `by` says who), `token` from a service token; an agent with any hold is stopped.
 * - Only a person restarts an agent: the person it acts for, an owner or an admin; anyone else
 *   gets 403 forbidden naming who may. Restarting lifts every hold. No key or token route lifts one.
 * - "Stop every agent" is one record per workspace; owners and admins turn it on and off.
 * - Every stop, restart and stop-all change is a ledger record naming who did it, in the same
 *   transaction as the change.
 */
export interface Who {
  actor: string;
  userId?: string;
  role?: Role;
}

export function createKillSwitch(deps: { store: Store; clock: Clock; ledger: Ledger }) {
  const { store, clock, ledger } = deps;
  const t = store.tables;

  const live = (wid: string, aid: string): AgentRecord => {
    const agent = t.agents.get([wid, aid]);
    if (!agent || agent.removedAt) throw new AppError('not_found', { message: 'No such agent in this workspace.' });
    return agent;
  };

  return {
    standing(wid: string, aid: string): Standing {
      return readStanding(store, wid, aid);
    },

    async stop(wid: string, aid: string, input: { hold: 'owner' | 'token'; reason: string }, who: Who): Promise<AgentRecord> {
      return store.write(() => {
        const agent = live(wid, aid);
        const hold = { hold: input.hold, reason: input.reason, by: who.actor, at: isoAt(clock.now()) };
        const stopped = { ...agent, holds: [...(agent.holds ?? []).filter((h) => h.hold !== input.hold), hold] };
        t.agents.put([wid, aid], stopped);
        ledger.record({ workspaceId: wid, actor: who.actor, kind: 'agent.stopped', subject: aid, data: { hold: input.hold, reason: input.reason } });
        return stopped;
      });
    },

    async restart(wid: string, aid: string, who: Who): Promise<AgentRecord> {
      return store.write(() => {
        const agent = live(wid, aid);
        const permitted = who.role === 'owner' || who.role === 'admin' || (who.userId !== undefined && agent.actsFor === who.userId);
        if (!permitted) {
          throw new AppError('forbidden', {
            message: `Only ${agent.actsFor ? `the person this agent acts for (${agent.actsFor}), ` : ''}an owner or an admin may restart this agent.`,
            fix: 'Ask the person the agent acts for, an owner or an admin to restart it.',
          });
        }
        const running = { ...agent, holds: [] };
        t.agents.put([wid, aid], running);
        ledger.record({ workspaceId: wid, actor: who.actor, kind: 'agent.restarted', subject: aid, data: { lifted: (agent.holds ?? []).map((h) => h.hold) } });
        return running;
      });
    },

    stopAllState(wid: string): { stopped: boolean; reason: string | null; by: string | null; at: string | null } {
      const s = t.stopAll.get(wid);
      return { stopped: s !== undefined, reason: s?.reason ?? null, by: s?.by ?? null, at: s?.at ?? null };
    },

    async stopAll(wid: string, reason: string, who: Who): Promise<StopAllRecord> {
      return store.write(() => {
        const record = { reason, by: who.actor, at: isoAt(clock.now()) };
        t.stopAll.put(wid, record);
        ledger.record({ workspaceId: wid, actor: who.actor, kind: 'workspace.stop_all', subject: wid, data: { reason } });
        return record;
      });
    },

    async startAll(wid: string, who: Who): Promise<void> {
      await store.write(() => {
        if (!t.stopAll.get(wid)) return;
        t.stopAll.remove(wid);
        ledger.record({ workspaceId: wid, actor: who.actor, kind: 'workspace.stop_all_lifted', subject: wid, data: {} });
      });
    },
  };
}

export type KillSwitch = ReturnType<typeof createKillSwitch>;
