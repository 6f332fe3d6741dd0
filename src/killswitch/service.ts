import { AppError } from '../errors/app-error.js';
import type { Clock } from '../lib/clock.js';
import { tokenOf, type Ledger } from '../ledger/service.js';
import type { IdSource } from '../lib/ids.js';
import type { Store } from '../store/index.js';
import type { AgentHolds } from '../agents/service.js';
import type { AgentRecord } from '../agents/records.js';
import type { ApprovalOpener } from '../approvals/service.js';
import type { ApprovalRecord } from '../approvals/records.js';
import type { StopAllRecord } from './records.js';
import type { Role } from '../people/records.js';
import { readStanding, type Standing } from '../agents/standing.js';
import { killSwitchRepo } from './repo.js';
import { sees } from '../agents/service.js';
import { applyApprovedFreezeInWrite, freezeSelected } from './freeze.js';
import { holdInWrite, live, requestInWrite, selected, stopAllInWrite, type KillSwitchContext } from './in-write.js';
import type { Selector } from './selector.js';
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
 * - "Stop every agent" is written here alone; an agent's holds through the agents' contract
 *   (`AgentHolds`), a freeze waiting for a person through the approvals' (`ApprovalOpener`).
 *
 * The writes the operations share are in ./in-write.ts; the freezes of a selection in ./freeze.ts.
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

/**
 * The kill switch: stops and restarts agents, freezes selections of them, and turns "stop every
 * agent" on and off, each with its ledger record in the same write. Writes "stop every agent" and
 * ledger records; agents' holds and waiting freezes through the agents' and approvals' contracts.
 */
export interface KillSwitch {
  /** The agent's standing as the gate enforces it, read now (agents/standing.ts). */
  standing(wid: string, aid: string): Promise<Standing>;
  /** A drill lifts its own hold, and nothing else: every other hold stays (`agent.drill_hold_lifted`). */
  liftDrillHold(wid: string, aid: string, who: Who & { tokenId?: string }): Promise<void>;
  /** Puts a hold on a live agent (`agent.stopped`), ending its grants elsewhere; 404 for no live agent. */
  stop(
    wid: string,
    aid: string,
    input: { hold: 'owner' | 'token' | 'drill'; reason: string },
    who: Who & { tokenId?: string },
  ): Promise<AgentRecord>;
  /**
   * Lifts every hold (`agent.restarted`, with `reason` when given: the console asks for one).
   * Only the person the agent acts for, an owner or an admin: 403 forbidden naming who may; 404
   * for an agent this person does not see.
   */
  restart(wid: string, aid: string, who: Who, reason?: string): Promise<AgentRecord>;
  /** A freeze of a selection (./freeze.ts): frozen now, or pending a person past a token's ceiling. */
  freezeSelected(
    wid: string,
    input: { selector: Selector; reason: string; confirmCount?: unknown },
    by: Freezer,
  ): Promise<BulkFreezeOutcome>;
  /** Applies a bulk freeze a person approved, inside the approval's store.write() (the approvals' side). */
  applyApprovedFreezeInWrite(
    wid: string,
    freeze: NonNullable<ApprovalRecord['freeze']>,
    approver: string,
  ): Promise<string[]>;
  /** "Stop every agent" as the console and `svc stop-all status` show it. Reads only. */
  stopAllState(wid: string): Promise<StopAllState>;
  /** "Stop every agent" on, by a person or the operator on the store (`workspace.stop_all`). */
  stopAll(wid: string, reason: string, who: Who): Promise<StopAllRecord>;
  /**
   * "Stop every agent" on, asked by a token: at once when the workspace has no more live agents
   * than the ceiling, else it waits for a person, as a bulk freeze does.
   */
  stopAllByToken(
    wid: string,
    reason: string,
    token: { actor: string; tokenId: string },
  ): Promise<{ kind: 'stopped'; state: StopAllState } | { kind: 'pending'; approvalId: string; count: number }>;
  /** "Stop every agent" off (`workspace.stop_all_lifted`); nothing when it was not on. */
  startAll(wid: string, who: Who): Promise<void>;
}

export interface KillSwitchDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  bulkFreezeCeiling: number;
  approvalTtlMs: number;
  /** The agents' contract: an agent's holds, written inside the kill switch's write. */
  agents: AgentHolds;
  /** The approvals' contract: a token's freeze past the ceiling waits for a person. */
  approvals: ApprovalOpener;
  /** What ends with a stop in other domains (OAuth connections), inside the stop's write. */
  principalEnded: PrincipalEnded;
}

export function createKillSwitch(deps: KillSwitchDeps): KillSwitch {
  const ctx: KillSwitchContext = { ...deps, repo: killSwitchRepo(deps.store) };
  const { store, ledger, repo } = ctx;

  return {
    standing: (wid, aid) => readStanding(store, wid, aid),

    async liftDrillHold(wid, aid, who) {
      await store.write(async () => {
        const agent = await repo.agent(wid, aid);
        if (!agent || !(agent.holds ?? []).some((h) => h.hold === 'drill')) return;
        await deps.agents.setHoldsInWrite(
          agent,
          (agent.holds ?? []).filter((h) => h.hold !== 'drill'),
        );
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

    async stop(wid, aid, input, who) {
      return store.write(async () => {
        await live(ctx, wid, aid);
        await holdInWrite(ctx, wid, [aid], input.hold, input.reason, who.actor);
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

    async restart(wid, aid, who, reason) {
      return store.write(async () => {
        const agent = await live(ctx, wid, aid);
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
        const running = await deps.agents.setHoldsInWrite(agent, []);
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

    freezeSelected: (wid, input, by) => freezeSelected(ctx, wid, input, by),
    applyApprovedFreezeInWrite: (wid, freeze, approver) => applyApprovedFreezeInWrite(ctx, wid, freeze, approver),

    async stopAllState(wid) {
      const s = await repo.stopAll(wid);
      return { stopped: s !== undefined, reason: s?.reason ?? null, by: s?.by ?? null, at: s?.at ?? null };
    },

    stopAll: (wid, reason, who) => store.write(() => stopAllInWrite(ctx, wid, reason, who)),

    async stopAllByToken(wid, reason, token) {
      return store.write(async () => {
        const count = (await selected(ctx, wid, { all: true })).length;
        if (count > deps.bulkFreezeCeiling)
          return requestInWrite(ctx, wid, { agentIds: [], reason, all: true }, token, count);
        const record = await stopAllInWrite(ctx, wid, reason, token);
        return { kind: 'stopped' as const, state: { stopped: true, ...record } };
      });
    },

    async startAll(wid, who) {
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
