import { AppError } from '../../errors/app-error.js';
import type { ErrorType } from '../../errors/catalogue.js';
import type { LedgerEvent } from '../../ledger/service.js';
import type { GatewayContext } from './context.js';

/**
 * Which refusals of the request path are evidence (docs/gateway.md "Refusals are evidence": refusals that reflect a policy
 * decision), and the ledger record each becomes.
 * Rules:
 * - Kind `gateway.call_refused`; subject the call's id (the refusal's x-svc-call-id); actor the
 *   agent (`agent:agt_…`) for an agent's key, else the key (`key:key_…`).
 * - Data: the error type, the step that refused, when, the key, the agent, the principal and team,
 *   the requested model and the task class when known, and the refusal's own facts (the hold; the
 *   data-loss counts by kind, never a value; the budget, its scope and use; the approver's id; the
 *   rate limit's scope, which limit, its value and what was used).
 * - Client text (the model's name) is made well-formed Unicode first, so the record can be hashed.
 */
export const EVIDENCED: ReadonlySet<ErrorType> = new Set<ErrorType>([
  'agent_stopped',
  'sensitive_data_blocked',
  'budget_exhausted',
  'approval_required',
  'rate_limited',
]);

const FACTS: Partial<Record<ErrorType, readonly string[]>> = {
  agent_stopped: ['hold', 'stopped'],
  sensitive_data_blocked: ['findings', 'in'],
  budget_exhausted: ['budgetId', 'scope', 'amountMicros', 'usedMicros'],
  approval_required: ['budgetId', 'scope'],
  rate_limited: ['scope', 'limit', 'limitValue', 'used'],
};

/** The ledger record of a refusal, or null when the error is not evidence. */
export function refusalEvent(ctx: GatewayContext, err: unknown, step: string): LedgerEvent | null {
  if (!(err instanceof AppError) || !EVIDENCED.has(err.type)) return null;
  const { key } = ctx;
  const facts: Record<string, unknown> = {};
  for (const name of FACTS[err.type] ?? []) if (err.details[name] !== undefined) facts[name] = err.details[name];
  if (err.type === 'approval_required') {
    const owner = err.details.owner as { id?: string } | null | undefined;
    facts.approverId = owner?.id ?? null;
  }
  const model = typeof ctx.body.model === 'string' ? ctx.body.model.toWellFormed() : null;
  return {
    workspaceId: ctx.wid,
    actor: key.agentId ? `agent:${key.agentId}` : `key:${key.id}`,
    kind: 'gateway.call_refused',
    subject: ctx.callId,
    data: {
      type: err.type,
      step,
      refusedAt: ctx.at,
      keyId: key.id,
      agentId: key.agentId,
      principal: key.principal?.toWellFormed() ?? null,
      team: key.team?.toWellFormed() ?? null,
      model,
      taskClass: ctx.taskClass,
      shape: ctx.req.shape,
      ...facts,
    },
  };
}
