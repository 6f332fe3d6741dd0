import type { GatewayModel } from '../../settings/schema.js';
import type { CallRecord } from '../records.js';
import type { Usage } from '../translate/responses.js';
import type { GatewayContext, GatewayEnv } from './context.js';
import { priceOf } from './prices.js';

/** What the answering steps (dry run, accounting) share: the call's record and the served model's headers. */

/** Queues the call's record: what the context knows, with `fields` over it. */
export function recordCall(ctx: GatewayContext, env: GatewayEnv, fields: Partial<CallRecord>): void {
  const { key } = ctx;
  // The call is over: its limits count the tokens it used instead of its estimate (limits.ts).
  ctx.limitHold?.settle((fields.inputTokens ?? 0) + (fields.outputTokens ?? 0));
  env.calls.record({
    id: ctx.callId,
    workspaceId: ctx.wid,
    at: ctx.at,
    keyId: key.id,
    principal: key.principal,
    team: key.team,
    agentId: key.agentId,
    taskId: ctx.taskId,
    taskClass: ctx.taskClass ?? '',
    sessionId: ctx.sessionId,
    shape: ctx.req.shape,
    stream: ctx.body.stream === true,
    dryRun: ctx.steering.dryRun,
    enforcement: ctx.headers['x-svc-enforcement']!,
    requestedModel: ctx.requested,
    model: null,
    provider: null,
    attemptedModels: [],
    inputTokens: 0,
    outputTokens: 0,
    costMicros: 0,
    latencyMs: Math.round(performance.now() - ctx.req.startedAt),
    overheadMicros: 0,
    outcome: 'ok',
    budgetId: ctx.admission.binding?.budget.id ?? null,
    ...(ctx.cacheState ? { cache: ctx.cacheState } : {}),
    ...fields,
  });
}

/** A call's tokens as its record keeps them (the cache's and reasoning parts only when there are any). */
export function tokenFields(u: Usage | null): Partial<CallRecord> {
  return {
    inputTokens: u?.input ?? 0,
    outputTokens: u?.output ?? 0,
    ...(u?.cacheRead ? { cacheReadTokens: u.cacheRead } : {}),
    ...(u?.cacheWrite ? { cacheWriteTokens: u.cacheWrite } : {}),
    ...(u?.cacheWrite1h ? { cacheWrite1hTokens: u.cacheWrite1h } : {}),
    ...(u?.reasoning ? { reasoningTokens: u.reasoning } : {}),
  };
}

/** The headers naming the model that serves (or would serve, in a dry run). */
export function serveHeaders(ctx: GatewayContext, env: GatewayEnv, m: GatewayModel): void {
  const { headers, requested } = ctx;
  headers[ctx.enforcement === 'shadow' ? 'x-svc-served-by' : 'x-svc-routed-to'] = m.id;
  headers['x-svc-jurisdiction'] = `${m.jurisdiction.domicile}; ${m.jurisdiction.region}`;
  const asked = requested ? env.catalogue.get(requested) : undefined;
  if (ctx.admission.binding && asked) {
    headers['x-svc-yield-multiplier'] = (priceOf(asked) / Math.max(1, priceOf(m))).toFixed(2);
  }
}

/** Time spent in the appliance so far, in microseconds, less `upstreamMs` spent waiting on the vendor. */
export const overheadMicros = (ctx: GatewayContext, upstreamMs = 0): number =>
  Math.max(0, Math.round((performance.now() - ctx.req.startedAt - upstreamMs) * 1000));
