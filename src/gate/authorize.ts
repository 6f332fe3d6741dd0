import { createHash } from 'node:crypto';
import { AppError } from '../errors/app-error.js';
import { canonicalJson } from '../lib/canonical-json.js';
import { isoAt } from '../lib/clock.js';
import { bounded, metrics } from '../lib/metrics.js';
import type { Presigned } from '../receipts/service.js';
import { decide, type Verdict } from './decide.js';
import type { ActionRecord } from './records.js';
import type { GateRepo } from './repo.js';
import type { AuthorizeInput } from './schemas.js';
import type { AuthorizeOptions, GateCaller, GateDeps } from './service.js';
import { IDEMPOTENCY_TTL_MS, toActionView, type ActionView } from './view.js';

/**
 * Deciding one action request (the gate's rules are listed in ./service.ts), as an ordered list of
 * steps, each a small function below:
 *  1. `askedOf`: the request's id, time, session, idempotency key and fingerprint.
 *  2. `presignAhead`: a payment the store would allow now gets its receipt signed on the thread
 *     pool, outside the write (used only if the write's own decision allows it too).
 *  In one store.write():
 *  3. `replay`: a live idempotency key answers with its first action (or 409 for another request).
 *  4. `decide` (./decide.ts): standing, then the mandate against the period usage.
 *  5. `mustAnswerNow`: a review the asker cannot wait for becomes a deny saying so.
 *  6. `openApproval`: a review opens its approval (the approvals' contract, with its expiry entry).
 *  7. `charge`: an allow counts in its rule's period usage.
 *  8. `issueReceipt`: an allowed payment gets its receipt, and the protocol receipts asked for (an
 *     AP2 receipt, an ACP allowance; a denied one its AP2 rejection receipt).
 *  9. `recordEvidence`: the ledger record of the decision.
 * 10. `store`: the action and its idempotency key; then the caller's own `inWrite`.
 *  After the write, the decision is counted once (a replay decided nothing new).
 */
export interface AuthorizeDeps extends GateDeps {
  repo: GateRepo;
}

export type Authorized = { action: ActionView; replayed: boolean };

/** One request, as the steps see it. */
interface Asked {
  caller: GateCaller;
  input: AuthorizeInput;
  options: AuthorizeOptions;
  id: string;
  now: number;
  sessionId: string | null;
  idemKey: string | null;
  /** The request's fingerprint ('' without an idempotency key). */
  print: string;
}

export function createAuthorize(deps: AuthorizeDeps) {
  return async function authorize(
    c: GateCaller,
    input: AuthorizeInput,
    options: AuthorizeOptions = {},
  ): Promise<Authorized> {
    const asked = askedOf(deps, c, input, options);
    const presigned = await presignAhead(deps, asked);
    const decided = await deps.store.write(async (): Promise<Authorized> => {
      const first = await replay(deps, asked);
      if (first) return first;
      const verdict = mustAnswerNow(await decide(deps, c, input, asked.now), options.cannotWait);
      const action = actionOf(asked, verdict);
      await openApproval(deps, asked, verdict, action);
      await charge(deps, action);
      await issueReceipt(deps, asked, verdict, action, presigned);
      await recordEvidence(deps, verdict, action);
      await store(deps, asked, action);
      const view = toActionView(action);
      await options.inWrite?.(view, false);
      return { action: view, replayed: false };
    });
    // Counted once durable, and once per decision (a replay decided nothing new).
    if (!decided.replayed) countDecision(decided.action.decision, decided.action.signals);
    return decided;
  };
}

function askedOf(deps: AuthorizeDeps, c: GateCaller, input: AuthorizeInput, options: AuthorizeOptions): Asked {
  const sessionId = input.session?.id ?? options.sessionId ?? null;
  const idemKey = input.idempotencyKey ?? null;
  return {
    caller: c,
    input,
    options,
    id: deps.ids.id('act'),
    now: deps.clock.now(),
    sessionId,
    idemKey,
    print: idemKey === null ? '' : fingerprint(input, sessionId),
  };
}

function fingerprint(input: AuthorizeInput, sessionId: string | null): string {
  const { idempotencyKey: _ignored, ...request } = input;
  return createHash('sha256')
    .update(canonicalJson({ ...request, sessionId }))
    .digest('base64url');
}

/**
 * Decides once against what the store holds now and, for a payment it would allow, signs its
 * receipt ahead on the thread pool. The transaction decides again on the state it commits
 * against; only that decision counts, and the receipt signed ahead is used only if it, too,
 * allows (the claims depend on nothing else).
 */
async function presignAhead(deps: AuthorizeDeps, a: Asked): Promise<Presigned | null> {
  const { caller: c, input } = a;
  if (
    input.payment &&
    (a.idemKey === null || !(await deps.repo.idempotency(c.workspaceId, c.agentId, a.idemKey))) &&
    (await decide(deps, c, input, a.now)).decision === 'allow'
  ) {
    return deps.receipts.presign(
      { id: a.id, agentId: c.agentId, type: input.type, payment: input.payment },
      false,
      a.now,
    );
  }
  return null;
}

/** Same key, same request, key still kept: the first action again. Same key, another request: 409. */
async function replay(deps: AuthorizeDeps, a: Asked): Promise<Authorized | null> {
  if (a.idemKey === null) return null;
  const { workspaceId, agentId } = a.caller;
  const seen = await deps.repo.idempotency(workspaceId, agentId, a.idemKey);
  if (!seen || Date.parse(seen.expiresAt) <= a.now) return null;
  if (seen.fingerprint !== a.print) {
    throw new AppError('idempotency_conflict', {
      message: `The idempotency key was first used for a different request (action ${seen.actionId}).`,
    });
  }
  const first = toActionView((await deps.repo.action(workspaceId, seen.actionId))!);
  await a.options.inWrite?.(first, true);
  return { action: first, replayed: true };
}

/** A review the asker cannot wait for (a card network's authorization) is a deny saying so. */
function mustAnswerNow(decided: Verdict, cannotWait: boolean | undefined): Verdict {
  if (decided.decision !== 'review' || !cannotWait) return decided;
  return {
    decision: 'deny',
    rule: null,
    signals: ['approval_unavailable'],
    reason: `${decided.reason} This request must be answered at once and cannot wait for a person.`,
  };
}

function actionOf(a: Asked, verdict: Verdict): ActionRecord {
  const { caller: c, input } = a;
  return {
    id: a.id,
    workspaceId: c.workspaceId,
    agentId: c.agentId,
    type: input.type,
    summary: input.summary,
    payment: input.payment ?? null,
    target: input.target ?? null,
    decision: verdict.decision,
    signals: [...verdict.signals],
    reason: verdict.reason,
    status: verdict.decision === 'allow' ? 'allowed' : verdict.decision === 'review' ? 'pending_approval' : 'denied',
    ruleId: verdict.rule?.id ?? null,
    approvalId: null,
    receipt: null,
    evidenceRecord: null,
    settlement: null,
    charge: verdict.decision === 'allow' ? verdict.charge : null,
    sessionId: a.sessionId,
    idempotencyKey: a.idemKey,
    metadata: input.metadata ?? null,
    createdAt: isoAt(a.now),
    ...protocolsOf(input),
  };
}

/** The protocol receipts asked for, kept with the action (an approval's allow issues them later). */
function protocolsOf(input: AuthorizeInput): Pick<ActionRecord, 'protocols'> {
  const ap2 = input.receipts?.includes('ap2') ?? false;
  const acp = input.acp ?? null;
  return ap2 || acp ? { protocols: { ap2, acp } } : {};
}

/** A review waits for people: its approval opens, as its rule asks, in this write. */
async function openApproval(deps: AuthorizeDeps, a: Asked, verdict: Verdict, action: ActionRecord): Promise<void> {
  if (verdict.decision !== 'review') return;
  const { workspaceId, agentId } = a.caller;
  const rule = verdict.rule;
  action.approvalId = deps.ids.id('apr');
  const requestedFor = (await deps.repo.agent(workspaceId, agentId))?.actsFor ?? null;
  await deps.approvals.openInWrite({
    id: action.approvalId,
    workspaceId,
    actionId: action.id,
    agentId,
    status: 'pending',
    approvers: rule.approval?.approvers ?? null,
    approvals: [],
    requiredApprovals: rule.approval?.count ?? 1,
    separationOfDuties: rule.approval?.separationOfDuties ?? false,
    createdAt: action.createdAt,
    expiresAt: isoAt(a.now + deps.approvalTtlMs),
    decidedBy: null,
    reason: null,
    requestedFor,
  });
}

/** An allow counts in its rule's period usage. */
async function charge(deps: AuthorizeDeps, action: ActionRecord): Promise<void> {
  if (action.charge) await deps.repo.add(action.workspaceId, action.agentId, action.charge, action.charge.amount);
}

/**
 * An allowed payment gets its receipt (the one signed ahead, when it still holds) and the protocol
 * receipts asked for; a denied one asked for AP2 its AP2 rejection receipt.
 */
async function issueReceipt(
  deps: AuthorizeDeps,
  a: Asked,
  verdict: Verdict,
  action: ActionRecord,
  presigned: Presigned | null,
): Promise<void> {
  if (verdict.decision === 'allow' && action.payment)
    action.receipt = await deps.receipts.issueInWrite(action, false, a.now, presigned);
  if (action.protocols && action.payment && verdict.decision !== 'review') {
    const outcome =
      verdict.decision === 'allow'
        ? { decision: 'allow' as const }
        : { decision: 'deny' as const, signals: action.signals, reason: action.reason };
    const issued = await deps.receipts.issueProtocolInWrite(
      { id: action.id, agentId: action.agentId, payment: action.payment, outcome },
      action.protocols,
      a.now,
    );
    Object.assign(action, issued);
  }
}

/** The decision's ledger record; anything but an allow names it as its evidence. */
async function recordEvidence(deps: AuthorizeDeps, verdict: Verdict, action: ActionRecord): Promise<void> {
  const evidence = await deps.ledger.record({
    workspaceId: action.workspaceId,
    actor: `agent:${action.agentId}`,
    kind: `action.${action.status}`,
    subject: action.id,
    data: {
      type: action.type,
      summary: action.summary,
      payment: action.payment,
      target: action.target,
      decision: action.decision,
      signals: action.signals,
      reason: action.reason,
      ruleId: action.ruleId,
      approvalId: action.approvalId,
      receipt: action.receipt !== null,
      sessionId: action.sessionId,
    },
  });
  if (verdict.decision !== 'allow') action.evidenceRecord = evidence.id;
}

/** The action, and its idempotency key (kept 24 hours). */
async function store(deps: AuthorizeDeps, a: Asked, action: ActionRecord): Promise<void> {
  await deps.repo.putAction(action);
  if (a.idemKey === null) return;
  await deps.repo.putIdempotency(action.workspaceId, action.agentId, a.idemKey, {
    actionId: action.id,
    fingerprint: a.print,
    expiresAt: isoAt(a.now + IDEMPOTENCY_TTL_MS),
  });
}

/** One count per decision, under each of its signals (signals are the product's own closed set). */
function countDecision(decision: string, signals: readonly string[]): void {
  if (signals.length === 0) metrics.decisions.inc({ decision, signal: 'none' });
  for (const signal of signals) metrics.decisions.inc({ decision, signal: bounded(signal) });
}
