import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { tokenOf, type Ledger } from '../ledger/service.js';
import type { AgentHolds } from '../agents/service.js';
import type { AgentRecord } from '../agents/records.js';
import type { ApprovalOpener } from '../approvals/service.js';
import type { PrincipalEnded } from '../lib/principal-ended.js';
import type { Store } from '../store/index.js';
import type { StopAllRecord } from './records.js';
import type { KillSwitchRepo } from './repo.js';
import { matches, type Selector } from './selector.js';
import type { Freezer } from './service.js';

/**
 * What every kill-switch operation is given, and the writes they share, each inside the
 * operation's own store.write(): a hold on agents, "stop every agent", and a token's request
 * past the ceiling.
 */
export interface KillSwitchContext {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  repo: KillSwitchRepo;
  /** The agents' contract: an agent's holds. */
  agents: AgentHolds;
  /** The approvals' contract: a freeze that waits for a person. */
  approvals: ApprovalOpener;
  /** What ends with a stop in other domains (OAuth connections). */
  principalEnded: PrincipalEnded;
  bulkFreezeCeiling: number;
  approvalTtlMs: number;
}

/** The agents of the workspace a selection names (./selector.ts). */
export async function selected(ctx: KillSwitchContext, wid: string, s: Selector): Promise<AgentRecord[]> {
  return (await ctx.repo.agents(wid)).filter((a) => matches(a, s));
}

/** A live agent of the workspace, or 404. */
export async function live(ctx: KillSwitchContext, wid: string, aid: string): Promise<AgentRecord> {
  const agent = await ctx.repo.agent(wid, aid);
  if (!agent || agent.removedAt) throw new AppError('not_found', { message: 'No such agent in this workspace.' });
  return agent;
}

/**
 * Puts a hold on each live agent named (replacing a hold of the same kind), and ends what it held
 * in other domains. Answers the agents it held. Inside store.write().
 */
export async function holdInWrite(
  ctx: KillSwitchContext,
  wid: string,
  agentIds: readonly string[],
  hold: 'owner' | 'token' | 'drill',
  reason: string,
  by: string,
): Promise<string[]> {
  const agents = await Promise.all(agentIds.map((aid) => ctx.repo.agent(wid, aid)));
  const done: string[] = [];
  for (const agent of agents) {
    if (!agent || agent.removedAt) continue;
    await ctx.agents.setHoldsInWrite(agent, [
      ...(agent.holds ?? []).filter((h) => h.hold !== hold),
      { hold, reason, by, at: isoAt(ctx.clock.now()) },
    ]);
    await ctx.principalEnded.agent(wid, { agentId: agent.id }, `agent frozen (${hold})`, ctx.clock.now());
    done.push(agent.id);
  }
  return done;
}

/** Turns on "stop every agent", with its ledger record. Inside store.write(). */
export async function stopAllInWrite(
  ctx: KillSwitchContext,
  wid: string,
  reason: string,
  who: Freezer,
): Promise<StopAllRecord> {
  const record = { reason, by: who.actor, at: isoAt(ctx.clock.now()) };
  await ctx.repo.putStopAll(wid, record);
  await ctx.principalEnded.agent(wid, { all: true }, 'every agent stopped', ctx.clock.now());
  await ctx.ledger.record({
    workspaceId: wid,
    actor: who.actor,
    ...tokenOf(who),
    kind: 'workspace.stop_all',
    subject: wid,
    data: { reason },
  });
  return record;
}

/**
 * A token's request past the ceiling: an approval of its own (opened through the approvals'
 * contract), for a person to decide, and its `fleet.freeze_requested` record. Inside store.write().
 */
export async function requestInWrite(
  ctx: KillSwitchContext,
  wid: string,
  freeze: { agentIds: string[]; reason: string; all: boolean },
  token: { actor: string; tokenId: string },
  count: number,
): Promise<{ kind: 'pending'; approvalId: string; count: number }> {
  const now = ctx.clock.now();
  const approvalId = ctx.ids.id('apr');
  const expiresAt = isoAt(now + ctx.approvalTtlMs);
  await ctx.approvals.openInWrite({
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
  await ctx.ledger.record({
    workspaceId: wid,
    actor: token.actor,
    tokenId: token.tokenId,
    kind: 'fleet.freeze_requested',
    subject: approvalId,
    data: {
      count,
      agentIds: freeze.agentIds,
      reason: freeze.reason,
      ceiling: ctx.bulkFreezeCeiling,
      ...(freeze.all ? { stopAll: true } : {}),
    },
  });
  return { kind: 'pending', approvalId, count };
}
