import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { tokenOf, type Ledger } from '../ledger/service.js';
import type { IdSource } from '../lib/ids.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { ApprovalRecord } from '../approvals/records.js';
import type { StopAllRecord } from './records.js';
import type { Role } from '../people/records.js';
import { readStanding, type Standing } from '../agents/standing.js';
import { killSwitchRepo } from './repo.js';
import { sees } from '../agents/service.js';
import { checkConfirmCount, matches, stopsEveryAgent, type Selector } from './selector.js';
import type { PrincipalEnded } from '../lib/principal-ended.js';

export type { Selector } from './selector.js';

/**
 * The kill switch (docs/gate.md#approvals-and-the-kill-switch).
 * Rules:
 * - Stopping an agent adds a hold: `owner` from the console and from `svc freeze --local` (the
 *   same hold; `by` says who), `token` from a service token; an agent with any hold is stopped.
 * - Only a person restarts an agent: the person it acts for, an owner or an admin; anyone else
 *   gets 403 forbidden naming who may. Restarting lifts every hold. No key or token route lifts one.
 * - "Stop every agent" is one record per workspace; owners and admins turn it on and off.
 * - A token may freeze one agent or a selection (hold `token`); a selection past the ceiling waits
 *   for a person (an approval of its own) and nothing is frozen until then. The operator on the
 *   store (`--local`, the root of trust) freezes a selection with hold `owner` and no ceiling, as a
 *   person in the console would. Either way the selection means the same (./selector.ts): the
 *   same confirmCount, and `all` also turns on "stop every agent".
 * - A token may turn on "stop every agent" when the workspace has no more live agents than the
 *   ceiling; past it, that too waits for a person.
 * - Every stop, restart and stop-all change is a ledger record naming who did it, in the same
 *   transaction as the change.
 */
export interface Who {
  actor: string;
  userId?: string;
  role?: Role;
}

export type BulkFreezeOutcome =
  { kind: 'frozen'; frozen: number; agentIds: string[] } | { kind: 'pending'; approvalId: string; count: number };

/** Waiting for a person: a token's freeze past the workspace's ceiling (202 over HTTP). */
export interface PendingFreeze {
  status: 'pending';
  approvalId: string;
  count: number;
}

/**
 * What a freeze of a selection answers (docs/gate.md#machine-administration), through the server
 * and from `svc freeze`.
 */
export type FreezeAnswer = { frozen: number; agentIds: string[] } | PendingFreeze;

export function toFreezeAnswer(outcome: BulkFreezeOutcome): FreezeAnswer {
  return outcome.kind === 'pending'
    ? { status: 'pending', approvalId: outcome.approvalId, count: outcome.count }
    : { frozen: outcome.frozen, agentIds: outcome.agentIds };
}

/** "Stop every agent" as the console and `svc stop-all status` show it. */
export interface StopAllState {
  stopped: boolean;
  reason: string | null;
  by: string | null;
  at: string | null;
}

/** Who froze: a token (hold `token`, held to the ceiling) or a person or the operator (hold `owner`). */
export type Freezer = Who & { tokenId?: string };

export function createKillSwitch(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  bulkFreezeCeiling: number;
  approvalTtlMs: number;
  /** What ends with a stop in other domains (OAuth connections), inside the stop's write. */
  principalEnded: PrincipalEnded;
}) {
  const { store, clock, ledger } = deps;
  const repo = killSwitchRepo(store);

  const selected = async (wid: string, s: Selector): Promise<AgentRecord[]> =>
    (await repo.agents(wid)).filter((a) => matches(a, s));

  const liveCount = async (wid: string): Promise<number> => (await selected(wid, { all: true })).length;

  /** Turns on "stop every agent", with its ledger record. Inside store.write(). */
  const stopAllInWrite = async (wid: string, reason: string, who: Freezer): Promise<StopAllRecord> => {
    const record = { reason, by: who.actor, at: isoAt(clock.now()) };
    await repo.putStopAll(wid, record);
    await deps.principalEnded.agent(wid, { all: true }, 'every agent stopped', clock.now());
    await ledger.record({
      workspaceId: wid,
      actor: who.actor,
      ...tokenOf(who),
      kind: 'workspace.stop_all',
      subject: wid,
      data: { reason },
    });
    return record;
  };

  /** A token's request past the ceiling: an approval of its own, for a person to decide. Inside store.write(). */
  const requestInWrite = async (
    wid: string,
    freeze: { agentIds: string[]; reason: string; all: boolean },
    token: { actor: string; tokenId: string },
    count: number,
  ): Promise<{ kind: 'pending'; approvalId: string; count: number }> => {
    const now = clock.now();
    const approvalId = deps.ids.id('apr');
    const expiresAt = isoAt(now + deps.approvalTtlMs);
    await repo.putPendingApproval({
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
      freeze: {
        agentIds: freeze.agentIds,
        reason: freeze.reason,
        requestedBy: token.actor,
        tokenId: token.tokenId,
        ...(freeze.all ? { all: true } : {}),
      },
    });
    await ledger.record({
      workspaceId: wid,
      actor: token.actor,
      tokenId: token.tokenId,
      kind: 'fleet.freeze_requested',
      subject: approvalId,
      data: {
        count,
        agentIds: freeze.agentIds,
        reason: freeze.reason,
        ceiling: deps.bulkFreezeCeiling,
        ...(freeze.all ? { stopAll: true } : {}),
      },
    });
    return { kind: 'pending', approvalId, count };
  };

  /** Puts a hold on each agent. Inside store.write(). */
  const holdInWrite = async (
    wid: string,
    agentIds: readonly string[],
    hold: 'owner' | 'token' | 'drill',
    reason: string,
    by: string,
  ): Promise<string[]> => {
    const agents = await Promise.all(agentIds.map((aid) => repo.agent(wid, aid)));
    const done: string[] = [];
    for (const agent of agents) {
      if (!agent || agent.removedAt) continue;
      await repo.putAgent({
        ...agent,
        holds: [...(agent.holds ?? []).filter((h) => h.hold !== hold), { hold, reason, by, at: isoAt(clock.now()) }],
      });
      await deps.principalEnded.agent(wid, { agentId: agent.id }, `agent frozen (${hold})`, clock.now());
      done.push(agent.id);
    }
    return done;
  };

  const live = async (wid: string, aid: string): Promise<AgentRecord> => {
    const agent = await repo.agent(wid, aid);
    if (!agent || agent.removedAt) throw new AppError('not_found', { message: 'No such agent in this workspace.' });
    return agent;
  };

  return {
    standing(wid: string, aid: string): Promise<Standing> {
      return readStanding(store, wid, aid);
    },

    /** A drill lifts its own hold, and nothing else: every other hold stays. */
    async liftDrillHold(wid: string, aid: string, who: Who & { tokenId?: string }): Promise<void> {
      await store.write(async () => {
        const agent = await repo.agent(wid, aid);
        if (!agent || !(agent.holds ?? []).some((h) => h.hold === 'drill')) return;
        await repo.putAgent({ ...agent, holds: (agent.holds ?? []).filter((h) => h.hold !== 'drill') });
        await ledger.record({
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
      return store.write(async () => {
        await live(wid, aid);
        await holdInWrite(wid, [aid], input.hold, input.reason, who.actor);
        await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          ...tokenOf(who),
          kind: 'agent.stopped',
          subject: aid,
          data: { hold: input.hold, reason: input.reason },
        });
        return (await repo.agent(wid, aid))!;
      });
    },

    /** `reason`, when given, is recorded with the restart (the console asks for one). */
    async restart(wid: string, aid: string, who: Who, reason?: string): Promise<AgentRecord> {
      return store.write(async () => {
        const agent = await live(wid, aid);
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
        await repo.putAgent(running);
        await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'agent.restarted',
          subject: aid,
          data: { lifted: (agent.holds ?? []).map((h) => h.hold), ...(reason ? { reason } : {}) },
        });
        return running;
      });
    },

    /**
     * A freeze of a selection (the selection's rules are in ./selector.ts). By a token:
     * hold `token`, one `fleet.frozen` record, and past the ceiling nothing is frozen: a person
     * must approve it in the console (pending). By the operator on the store (no tokenId): hold
     * `owner` on each agent with an `agent.stopped` record each, as Stop in the console writes,
     * and no ceiling. Either way `all` also turns on "stop every agent".
     */
    async freezeSelected(
      wid: string,
      input: { selector: Selector; reason: string; confirmCount?: unknown },
      by: Freezer,
    ): Promise<BulkFreezeOutcome> {
      return store.write(async (): Promise<BulkFreezeOutcome> => {
        const agents = await selected(wid, input.selector);
        if (agents.length === 0) throw new AppError('nothing_selected');
        checkConfirmCount(input.confirmCount, agents.length);
        const agentIds = agents.map((a) => a.id);
        const all = stopsEveryAgent(input.selector);
        if (by.tokenId === undefined) {
          const frozen = await holdInWrite(wid, agentIds, 'owner', input.reason, by.actor);
          for (const aid of frozen)
            await ledger.record({
              workspaceId: wid,
              actor: by.actor,
              kind: 'agent.stopped',
              subject: aid,
              data: { hold: 'owner', reason: input.reason },
            });
          if (all) await stopAllInWrite(wid, input.reason, by);
          return { kind: 'frozen', frozen: frozen.length, agentIds: frozen };
        }
        const token = { actor: by.actor, tokenId: by.tokenId };
        if (agentIds.length > deps.bulkFreezeCeiling)
          return requestInWrite(wid, { agentIds, reason: input.reason, all }, token, agentIds.length);
        const frozen = await holdInWrite(wid, agentIds, 'token', input.reason, token.actor);
        await ledger.record({
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
        if (all) await stopAllInWrite(wid, input.reason, by);
        return { kind: 'frozen', frozen: frozen.length, agentIds: frozen };
      });
    },

    /** Applies a bulk freeze a person approved. Inside store.write(). */
    async applyApprovedFreezeInWrite(
      wid: string,
      freeze: NonNullable<ApprovalRecord['freeze']>,
      approver: string,
    ): Promise<string[]> {
      const frozen = await holdInWrite(
        wid,
        freeze.agentIds,
        'token',
        freeze.reason,
        `${freeze.requestedBy}, approved by ${approver}`,
      );
      await ledger.record({
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
      if (freeze.all) await stopAllInWrite(wid, freeze.reason, { actor: approver });
      return frozen;
    },

    async stopAllState(wid: string): Promise<StopAllState> {
      const s = await repo.stopAll(wid);
      return { stopped: s !== undefined, reason: s?.reason ?? null, by: s?.by ?? null, at: s?.at ?? null };
    },

    /** "Stop every agent" on, by a person or the operator on the store. */
    async stopAll(wid: string, reason: string, who: Who): Promise<StopAllRecord> {
      return store.write(() => stopAllInWrite(wid, reason, who));
    },

    /**
     * "Stop every agent" on, asked by a token: at once when the workspace has no more live agents
     * than the ceiling, else it waits for a person, as a bulk freeze does.
     */
    async stopAllByToken(
      wid: string,
      reason: string,
      token: { actor: string; tokenId: string },
    ): Promise<{ kind: 'stopped'; state: StopAllState } | { kind: 'pending'; approvalId: string; count: number }> {
      return store.write(async () => {
        const count = await liveCount(wid);
        if (count > deps.bulkFreezeCeiling)
          return requestInWrite(wid, { agentIds: [], reason, all: true }, token, count);
        const record = await stopAllInWrite(wid, reason, token);
        return { kind: 'stopped' as const, state: { stopped: true, ...record } };
      });
    },

    async startAll(wid: string, who: Who): Promise<void> {
      await store.write(async () => {
        if (!(await repo.stopAll(wid))) return;
        await repo.removeStopAll(wid);
        await ledger.record({
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
