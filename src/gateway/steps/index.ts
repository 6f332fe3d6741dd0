import { isoAt } from '../../lib/clock.js';
import { promptText } from '../screen.js';
import { account } from './account.js';
import { admit } from './admit.js';
import { budget } from './budget.js';
import { cache, cacheWrite } from './cache.js';
import { carry } from './carry.js';
import { classify } from './classify.js';
import { countTokensStep } from './count-tokens.js';
import type {
  CheckStep,
  GatewayAnswer,
  GatewayContext,
  GatewayEnv,
  GatewayRequest,
  RouteShape,
  Step,
} from './context.js';
import { dataLoss } from './data-loss.js';
import { dryRun } from './dry-run.js';
import { killSwitch } from './kill-switch.js';
import { limit } from './limit.js';
import { plan } from './plan.js';
import { responsesState } from './responses-state.js';
import { route } from './route.js';
import { upstream } from './upstream.js';

/**
 * The model gateway's request path (docs/gateway.md, "What happens to each request"): one step
 * per file, in the order of the tables below, which alone give it (a step's file does not number
 * itself; test/gateway/steps.test.ts holds the docs' list and this map to the tables). A step
 * refuses by throwing an AppError, ends the request by returning an answer, or goes on. Every
 * step reads `req`, `key`, `body`, `wid`, `nowMs`, `at`, `callId` and `prompt()`
 * and may set answer `headers`; besides, of the context (context.ts):
 *
 *   step         reads                                      writes
 *   kill-switch  -                                          -
 *   plan         -                                          -
 *   classify     -                                          steering taskId sessionId profile own
 *                                                           enforcement taskClass
 *   route        steering profile enforcement taskClass     requested wouldRouteTo candidates
 *   carry        candidates                                 candidates (those that can carry it)
 *   data-loss    own                                        redacted; body (redacts in place)
 *   limit        profile                                    limitHold
 *   budget       enforcement candidates steering            admission reservation; candidates
 *                                                           (cheapest first)
 *   admit        enforcement admission wouldRouteTo         -
 *                redacted taskId
 *   cache        profile candidates steering reservation,   cacheSlot cacheState reservation
 *                and what a call record names (below)
 *   dry-run      steering candidates admission, and what    -
 *                a call record names (below)
 *   upstream     candidates enforcement requested           attempted outcome
 *                reservation
 *   account      outcome reservation attempted, and what    -
 *                a call record names: taskId sessionId
 *                taskClass requested steering admission
 *   cache-write  cacheSlot outcome, and the answer          the answer (its stream teed)
 *
 * Invariants:
 * - Every check's refusal comes before the upstream step, the only one that sends (after it, only
 *   the vendor's answer is refused: a 4xx of its own, or no model answering). `CHECKS` holds them
 *   all. The runner awaits each step in turn (a check that reads the store is asynchronous).
 * - The budget step's admission takes the request's reservation in the same store write as its
 *   check (budgets.ts `admit`), so racing requests of every process each see the others'
 *   reservations and a budget is overrun by at most one. A refusal after it, or a cache hit,
 *   releases it, in one place (`release`, called by the runner); the call's end settles it
 *   (removed, and its cost added, in one write).
 * - After-steps (the response cache's write) run only on an answer, and may replace it.
 * - Counts that bound traffic are read, checked and written in one store write each: the rate
 *   windows (limit step, limits.ts) and the month's requests (admit step, calls.ts).
 * - A refusal by the kill switch, data loss or a budget (evidence.ts `EVIDENCED`) is a ledger
 *   record, queued off the hot path (refusals.ts); the error carries its id as `evidenceRecord`.
 */
export const CHECKS: readonly CheckStep[] = [
  killSwitch,
  plan,
  classify,
  route,
  carry,
  dataLoss,
  limit,
  budget,
  admit,
  cache,
  dryRun,
];

export const STEPS: readonly Step[] = [...CHECKS, upstream, account, cacheWrite];

/**
 * The path by route: POST /v1/responses checks that a vendor keeps state when asked to, right
 * after routing, and is never answered from the response cache (its answers name state the
 * vendor keeps); POST /v1/messages/count_tokens is no model call (no plan, budget, admission or
 * record) and is answered by its own step.
 */
export const RESPONSES_STEPS: readonly Step[] = [
  killSwitch,
  plan,
  classify,
  route,
  responsesState,
  carry,
  dataLoss,
  limit,
  budget,
  admit,
  dryRun,
  upstream,
  account,
];
export const COUNT_TOKENS_STEPS: readonly Step[] = [killSwitch, classify, route, dataLoss, countTokensStep];

export const stepsFor = (shape: RouteShape): readonly Step[] =>
  shape === 'responses' ? RESPONSES_STEPS : shape === 'count_tokens' ? COUNT_TOKENS_STEPS : STEPS;

/** A fresh context: every field a step fills starts empty. */
export function createContext(req: GatewayRequest, env: GatewayEnv): GatewayContext {
  const nowMs = env.clock.now();
  const headers = req.answerHeaders ?? {};
  const callId = env.ids.id('call');
  headers['x-svc-call-id'] = callId;
  let prompt: string | null = null;
  return {
    req,
    key: req.key,
    body: req.body,
    wid: req.key.workspaceId,
    nowMs,
    at: isoAt(nowMs),
    callId,
    headers,
    prompt: () => (prompt ??= promptText(req.body)),
    steering: {
      taskClass: null,
      taskId: null,
      objective: 'balanced',
      dryRun: false,
      clientSession: null,
      oversight: false,
    },
    taskId: '',
    sessionId: '',
    profile: null,
    own: undefined,
    enforcement: env.settings.enforcement,
    taskClass: null,
    requested: null,
    wouldRouteTo: null,
    candidates: [],
    redacted: {},
    limitHold: null,
    cacheSlot: null,
    cacheState: null,
    admission: { step: null, binding: null, applicable: [] },
    reservation: null,
    attempted: [],
    outcome: { kind: 'exhausted' },
  };
}

/**
 * The one place a request's budget reservation is released (settled at zero): the request ended
 * without a model's answer to charge (a refusal by any step, the vendor's refusal, no model
 * answering, a cache hit). An answer's cost settles it in the accounting step instead; a settle
 * runs once (budgets.ts), so a release after it changes nothing.
 */
export async function release(ctx: GatewayContext): Promise<void> {
  const reservation = ctx.reservation;
  ctx.reservation = null;
  await reservation?.settle(0);
}

/**
 * Runs the steps in order until one answers, then the after-steps on that answer. A refusal is
 * thrown as it was raised, after the reservation was released and `onRefusal` (which may add to
 * it, e.g. its evidence record) saw it with the step that raised it.
 */
export async function runSteps(
  ctx: GatewayContext,
  env: GatewayEnv,
  onRefusal: (err: unknown, step: Step) => void | Promise<void>,
  steps: readonly Step[] = STEPS,
): Promise<GatewayAnswer> {
  let answer: GatewayAnswer | void = undefined;
  for (const step of steps) {
    if ('after' in step) {
      if (answer) answer = step.after(ctx, env, answer);
      continue;
    }
    if (answer) continue;
    try {
      answer = await step.run(ctx, env);
    } catch (err) {
      await release(ctx);
      await onRefusal(err, step);
      throw err;
    }
  }
  if (!answer) throw new Error('the gateway steps ended without an answer');
  if (ctx.outcome.kind !== 'answered') await release(ctx);
  return answer;
}
