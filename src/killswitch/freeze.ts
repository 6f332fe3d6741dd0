import type { ApprovalRecord } from '../approvals/records.js';
import { AppError } from '../errors/app-error.js';
import { holdInWrite, requestInWrite, selected, stopAllInWrite, type KillSwitchContext } from './in-write.js';
import { checkConfirmCount, stopsEveryAgent, type Selector } from './selector.js';
import type { BulkFreezeOutcome, Freezer } from './service.js';

/**
 * A freeze of a selection (the selection's rules are in ./selector.ts), in one store.write(). By
 * a token: hold `token`, one `fleet.frozen` record, and past the ceiling nothing is frozen: a
 * person must approve it in the console (pending). By the operator on the store (no tokenId):
 * hold `owner` on each agent with an `agent.stopped` record each, as Stop in the console writes,
 * and no ceiling. Either way `all` also turns on "stop every agent".
 */
export async function freezeSelected(
  ctx: KillSwitchContext,
  wid: string,
  input: { selector: Selector; reason: string; confirmCount?: unknown },
  by: Freezer,
): Promise<BulkFreezeOutcome> {
  return ctx.store.write(async (): Promise<BulkFreezeOutcome> => {
    const agents = await selected(ctx, wid, input.selector);
    if (agents.length === 0) throw new AppError('nothing_selected');
    checkConfirmCount(input.confirmCount, agents.length);
    const agentIds = agents.map((a) => a.id);
    const all = stopsEveryAgent(input.selector);
    if (by.tokenId === undefined) {
      const frozen = await holdInWrite(ctx, wid, agentIds, 'owner', input.reason, by.actor);
      for (const aid of frozen)
        await ctx.ledger.record({
          workspaceId: wid,
          actor: by.actor,
          kind: 'agent.stopped',
          subject: aid,
          data: { hold: 'owner', reason: input.reason },
        });
      if (all) await stopAllInWrite(ctx, wid, input.reason, by);
      return { kind: 'frozen', frozen: frozen.length, agentIds: frozen };
    }
    const token = { actor: by.actor, tokenId: by.tokenId };
    if (agentIds.length > ctx.bulkFreezeCeiling)
      return requestInWrite(ctx, wid, { agentIds, reason: input.reason, all }, token, agentIds.length);
    const frozen = await holdInWrite(ctx, wid, agentIds, 'token', input.reason, token.actor);
    await ctx.ledger.record({
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
    if (all) await stopAllInWrite(ctx, wid, input.reason, by);
    return { kind: 'frozen', frozen: frozen.length, agentIds: frozen };
  });
}

/**
 * Applies a bulk freeze a person approved, inside the approval's store.write(): hold `token` on
 * each agent, one `fleet.frozen` record naming the approver and the token that asked, and "stop
 * every agent" when the freeze named every agent.
 */
export async function applyApprovedFreezeInWrite(
  ctx: KillSwitchContext,
  wid: string,
  freeze: NonNullable<ApprovalRecord['freeze']>,
  approver: string,
): Promise<string[]> {
  const frozen = await holdInWrite(
    ctx,
    wid,
    freeze.agentIds,
    'token',
    freeze.reason,
    `${freeze.requestedBy}, approved by ${approver}`,
  );
  await ctx.ledger.record({
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
  if (freeze.all) await stopAllInWrite(ctx, wid, freeze.reason, { actor: approver });
  return frozen;
}
