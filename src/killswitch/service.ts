import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { tokenOf, type Ledger } from '../ledger/service.js';
import type { IdSource } from '../lib/ids.js';
import type { AgentRecord, ApprovalRecord, Role, StopAllRecord, Store } from '../store/index.js';
import { readStanding, type Standing } from './standing.js';
import { endConnectionsInWrite } from '../oauth/connections.js';
import { sees } from '../agents/service.js';

/**
 * The kill switch (SPEC.md 1.3, 3 agent rows; API.md 2).
 * Rules:
 * - Stopping an agent adds a hold: `owner` from the console and from `svc freeze --local` (the
 *   same hold; `by` says who), `token` from a service token; an agent with any hold is stopped.
 * - Only a person restarts an agent: the person it acts for, an owner or an admin; anyone else
 *   gets 403 forbidden naming who may. Restarting lifts every hold. No key or token route lifts one.
 * - "Stop every agent" is one record per workspace; owners and admins turn it on and off.
 * - A token may freeze one agent or a selection (hold `token`); a selection past the ceiling waits
 *   for a person (an approval of its own) and nothing is frozen until then.
 * - Every stop, restart and stop-all change is a ledger record naming who did it, in the same
 *   transaction as the change.
 */
export interface Who {
  actor: string;
  userId?: string;
  role?: Role;
}

/** Which agents a bulk freeze names (API.md 4): every criterion given must hold. */
export interface Selector {
  agentIds?: string[];
  tags?: string[];
  blueprint?: string;
  actsFor?: string;
  all?: boolean;
}

export type BulkFreezeOutcome =
  { kind: 'frozen'; frozen: number; agentIds: string[] } | { kind: 'pending'; approvalId: string; count: number };

export function createKillSwitch(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  bulkFreezeCeiling: number;
  approvalTtlMs: number;
}) {
  const { store, clock, ledger } = deps;
  const t = store.tables;

  const selected = (wid: string, s: Selector): AgentRecord[] =>
    t.agents
      .scan([wid])
      .map((e) => e.value)
      .filter(
        (a) =>
          !a.removedAt &&
          (!s.agentIds || s.agentIds.includes(a.id)) &&
          (!s.tags || s.tags.every((tag) => a.tags.includes(tag))) &&
          (!s.blueprint || a.blueprint === s.blueprint) &&
          (!s.actsFor || a.actsFor === s.actsFor),
      );

  /** Puts a hold on each agent. Inside store.write(). */
  const holdInWrite = (
    wid: string,
    agentIds: readonly string[],
    hold: 'owner' | 'token' | 'drill',
    reason: string,
    by: string,
  ): string[] => {
    const done: string[] = [];
    for (const aid of agentIds) {
      const agent = t.agents.get([wid, aid]);
      if (!agent || agent.removedAt) continue;
      t.agents.put([wid, aid], {
        ...agent,
        holds: [...(agent.holds ?? []).filter((h) => h.hold !== hold), { hold, reason, by, at: isoAt(clock.now()) }],
      });
      endConnectionsInWrite(t, wid, { agentId: aid }, `agent frozen (${hold})`, clock.now());
      done.push(aid);
    }
    return done;
  };

  const live = (wid: string, aid: string): AgentRecord => {
    const agent = t.agents.get([wid, aid]);
    if (!agent || agent.removedAt) throw new AppError('not_found', { message: 'No such agent in this workspace.' });
    return agent;
  };

  return {
    standing(wid: string, aid: string): Standing {
      return readStanding(store, wid, aid);
    },

    /** A drill lifts its own hold, and nothing else: every other hold stays. */
    async liftDrillHold(wid: string, aid: string, who: Who & { tokenId?: string }): Promise<void> {
      await store.write(() => {
        const agent = t.agents.get([wid, aid]);
        if (!agent || !(agent.holds ?? []).some((h) => h.hold === 'drill')) return;
        t.agents.put([wid, aid], { ...agent, holds: (agent.holds ?? []).filter((h) => h.hold !== 'drill') });
        ledger.record({
          workspaceId: wid,
          actor: who.actor,
          ...tokenOf(who),
          kind: 'agent.drill_hold_lifted',
          subject: aid,
          data: {},
        });
      });
    },

    async stop(
      wid: string,
      aid: string,
      input: { hold: 'owner' | 'token' | 'drill'; reason: string },
      who: Who & { tokenId?: string },
    ): Promise<AgentRecord> {
      return store.write(() => {
        live(wid, aid);
        holdInWrite(wid, [aid], input.hold, input.reason, who.actor);
        ledger.record({
          workspaceId: wid,
          actor: who.actor,
          ...tokenOf(who),
          kind: 'agent.stopped',
          subject: aid,
          data: { hold: input.hold, reason: input.reason },
        });
        return t.agents.get([wid, aid])!;
      });
    },

    async restart(wid: string, aid: string, who: Who): Promise<AgentRecord> {
      return store.write(() => {
        const agent = live(wid, aid);
        // An agent this person does not see (agents/service.ts `sees`) is not found to them.
        if (who.role !== undefined && who.userId !== undefined && !sees(agent, { userId: who.userId, role: who.role }))
          throw new AppError('not_found', { message: 'No such agent in this workspace.' });
        const permitted =
          who.role === 'owner' || who.role === 'admin' || (who.userId !== undefined && agent.actsFor === who.userId);
        if (!permitted) {
          throw new AppError('forbidden', {
            message: `Only ${agent.actsFor ? `the person this agent acts for (${agent.actsFor}), ` : ''}an owner or an admin may restart this agent.`,
            fix: 'Ask the person the agent acts for, an owner or an admin to restart it.',
          });
        }
        const running = { ...agent, holds: [] };
        t.agents.put([wid, aid], running);
        ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'agent.restarted',
          subject: aid,
          data: { lifted: (agent.holds ?? []).map((h) => h.hold) },
        });
        return running;
      });
    },

    /**
     * A token's bulk freeze (API.md 4): the selection must match something and `confirmCount`
     * must equal its count now (409 selection_changed with oldCount and newCount otherwise). Past
     * the ceiling nothing is frozen: a person must approve it in the console (202 pending).
     * Either way the ledger says which token asked.
     */
    async freezeSelected(
      wid: string,
      input: { selector: Selector; reason: string; confirmCount: number },
      token: { actor: string; tokenId: string },
    ): Promise<BulkFreezeOutcome> {
      return store.write((): BulkFreezeOutcome => {
        const agents = selected(wid, input.selector);
        if (agents.length === 0) throw new AppError('nothing_selected');
        if (agents.length !== input.confirmCount) {
          throw new AppError('selection_changed', {
            message: `confirmCount is ${input.confirmCount} but the selector matches ${agents.length} agents now.`,
            details: { oldCount: input.confirmCount, newCount: agents.length },
          });
        }
        const agentIds = agents.map((a) => a.id);
        if (agentIds.length > deps.bulkFreezeCeiling) {
          const now = clock.now();
          const approvalId = deps.ids.id('apr');
          const expiresAt = isoAt(now + deps.approvalTtlMs);
          t.approvals.put([wid, approvalId], {
            id: approvalId,
            workspaceId: wid,
            actionId: '',
            agentId: '',
            status: 'pending',
            approvers: null,
            approvals: [],
            requiredApprovals: 1,
            separationOfDuties: false,
            createdAt: isoAt(now),
            expiresAt,
            decidedBy: null,
            reason: null,
            freeze: { agentIds, reason: input.reason, requestedBy: token.actor, tokenId: token.tokenId },
          });
          t.pendingApprovals.put([expiresAt, wid, approvalId], true);
          ledger.record({
            workspaceId: wid,
            actor: token.actor,
            tokenId: token.tokenId,
            kind: 'fleet.freeze_requested',
            subject: approvalId,
            data: { count: agentIds.length, agentIds, reason: input.reason, ceiling: deps.bulkFreezeCeiling },
          });
          return { kind: 'pending', approvalId, count: agentIds.length };
        }
        const frozen = holdInWrite(wid, agentIds, 'token', input.reason, token.actor);
        ledger.record({
          workspaceId: wid,
          actor: token.actor,
          tokenId: token.tokenId,
          kind: 'fleet.frozen',
          subject: wid,
          data: {
            summary: `${token.actor} froze ${frozen.length} agents`,
            count: frozen.length,
            agentIds: frozen,
            reason: input.reason,
          },
        });
        return { kind: 'frozen', frozen: frozen.length, agentIds: frozen };
      });
    },

    /** Applies a bulk freeze a person approved. Inside store.write(). */
    applyApprovedFreezeInWrite(wid: string, freeze: NonNullable<ApprovalRecord['freeze']>, approver: string): string[] {
      const frozen = holdInWrite(
        wid,
        freeze.agentIds,
        'token',
        freeze.reason,
        `${freeze.requestedBy}, approved by ${approver}`,
      );
      ledger.record({
        workspaceId: wid,
        actor: approver,
        kind: 'fleet.frozen',
        subject: wid,
        data: {
          summary: `${freeze.requestedBy} froze ${frozen.length} agents, approved by ${approver}`,
          count: frozen.length,
          agentIds: frozen,
          reason: freeze.reason,
          requestedBy: freeze.requestedBy,
          tokenId: freeze.tokenId,
        },
      });
      return frozen;
    },

    stopAllState(wid: string): { stopped: boolean; reason: string | null; by: string | null; at: string | null } {
      const s = t.stopAll.get(wid);
      return { stopped: s !== undefined, reason: s?.reason ?? null, by: s?.by ?? null, at: s?.at ?? null };
    },

    async stopAll(wid: string, reason: string, who: Who): Promise<StopAllRecord> {
      return store.write(() => {
        const record = { reason, by: who.actor, at: isoAt(clock.now()) };
        t.stopAll.put(wid, record);
        endConnectionsInWrite(t, wid, { all: true }, 'every agent stopped', clock.now());
        ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'workspace.stop_all',
          subject: wid,
          data: { reason },
        });
        return record;
      });
    },

    async startAll(wid: string, who: Who): Promise<void> {
      await store.write(() => {
        if (!t.stopAll.get(wid)) return;
        t.stopAll.remove(wid);
        ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'workspace.stop_all_lifted',
          subject: wid,
          data: {},
        });
      });
    },
  };
}

export type KillSwitch = ReturnType<typeof createKillSwitch>;
