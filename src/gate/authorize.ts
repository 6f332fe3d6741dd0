import { createHash } from 'node:crypto';
import { AppError, invalidField } from '../errors/app-error.js';
import type { Presented } from '../ap2/service.js';
import { canonicalJson } from '../lib/canonical-json.js';
import { isoAt } from '../lib/clock.js';
import { bounded, metrics } from '../lib/metrics.js';
import type { Presigned } from '../receipts/service.js';
import { readStanding } from '../agents/standing.js';
import { decide, type Verdict } from './decide.js';
import { parseChallenge } from './challenge.js';
import type { ActionChallenge, ActionRecord } from './records.js';
import type { GateRepo } from './repo.js';
import type { AuthorizeInput } from './schemas.js';
import type { AuthorizeOptions, GateCaller, GateDeps } from './service.js';
import { IDEMPOTENCY_TTL_MS, toActionView, type ActionView } from './view.js';

/**
 * Deciding one action request (the gate's rules are listed in ./service.ts), as an ordered list of
 * steps, each a small function below:
 *  0. `readChallenge` (./challenge.ts): a 402 payment challenge in place of `payment` becomes the
 *     payment it asks for (400 naming what is wrong, before anything is stored). One that no longer
 *     reads (an MPP challenge past its `expires`) under an idempotency key still in force is
 *     answered by the replay below, the first action again; with no first action, the 400 stands.
 *  1. `askedOf`: the request's id, time, session, idempotency key and fingerprint.
 *     `presentedMandate`: a presented AP2 closed mandate verified (src/ap2/presentation.ts),
 *     before anything is written; in the write it is admitted (nonce unused, mandate presentable)
 *     after `replay`, only its mandate's rules judge, and its nonce is kept after `store`.
 *  2. `presignAhead`: a payment the store would allow now gets its receipt signed on the thread
 *     pool, outside the write (used only if the write's own decision allows it too).
 *  In one store.write(), serialized on the deciding agent's record (`serializeOn`: decisions for
 *  one agent run one after another; decisions for other agents never wait for or fail this one):
 *  3. `readAhead`: every known key the decision reads, asked at once (one round trip on PostgreSQL;
 *     the steps below find them in the transaction).
 *     `replay`: a live idempotency key answers with its first action (or 409 for another request).
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
/** gate.assetCurrencies' default: USDC counts in US dollars, EURC in euros. */
export const DEFAULT_ASSET_CURRENCIES: Readonly<Record<string, string>> = { USDC: 'USD', EURC: 'EUR' };

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
  /** What was read from the request's 402 challenge, if it sent one. */
  challenge: ActionChallenge | null;
}

export function createAuthorize(deps: AuthorizeDeps) {
  return async function authorize(
    c: GateCaller,
    input: AuthorizeInput,
    options: AuthorizeOptions = {},
  ): Promise<Authorized> {
    const asked = askedOf(deps, c, input, options);
    const unread = readChallenge(deps, asked);
    const presented = await presentedMandate(deps, asked);
    const presigned = await presignAhead(deps, asked, presented);
    const { workspaceId, agentId } = c;
    const decided = await deps.store.write(
      async (): Promise<Authorized> => {
        await readAhead(deps, asked);
        const first = await replay(deps, asked);
        if (first) return first;
        if (unread) throw unread;
        if (presented) await deps.ap2!.admitInWrite(c, presented, asked.now);
        const verdict = mustAnswerNow(
          await decide(deps, c, asked.input, asked.now, presented?.mandateId ?? null),
          options.cannotWait,
        );
        const action = actionOf(asked, verdict, presented);
        await openApproval(deps, asked, verdict, action);
        await charge(deps, action);
        await issueReceipt(deps, asked, verdict, action, presigned);
        await recordEvidence(deps, verdict, action);
        await store(deps, asked, action);
        if (presented) await deps.ap2!.presentedInWrite(c, presented, action.id, action.createdAt);
        const view = toActionView(action);
        await options.inWrite?.(view, false);
        return { action: view, replayed: false };
      },
      { serializeOn: [['agents', [workspaceId, agentId]]] },
    );
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
    challenge: null,
  };
}

/**
 * Step 0: the payment a 402 challenge asks for, in place of `payment`, and what was read from it.
 * A challenge that does not read is thrown at once without an idempotency key; with one, it is
 * returned, for the write to throw unless the key replays a first action.
 */
function readChallenge(deps: AuthorizeDeps, a: Asked): Error | null {
  const sent = a.input.challenge;
  if (!sent) return null;
  let read: ReturnType<typeof parseChallenge>;
  try {
    read = parseChallenge(sent, deps.assetCurrencies ?? DEFAULT_ASSET_CURRENCIES, a.now, a.input.target?.domain);
  } catch (err) {
    if (a.idemKey === null) throw err;
    return err as Error;
  }
  const { payment, assetSymbol: _symbol, ...challenge } = read;
  a.input = { ...a.input, payment };
  a.challenge = challenge;
  return null;
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
async function presignAhead(deps: AuthorizeDeps, a: Asked, presented: Presented | null): Promise<Presigned | null> {
  const { caller: c, input } = a;
  if (
    input.payment &&
    (a.idemKey === null || !(await deps.repo.idempotency(c.workspaceId, c.agentId, a.idemKey))) &&
    (await decide(deps, c, input, a.now, presented?.mandateId ?? null)).decision === 'allow'
  ) {
    return deps.receipts.presign(
      { id: a.id, agentId: c.agentId, type: input.type, payment: input.payment, challenge: a.challenge },
      false,
      a.now,
    );
  }
  return null;
}

/**
 * The keys the decision will read, asked together so that PostgreSQL answers them in one round
 * trip (the transaction keeps the answers: the steps' own reads of them ask nothing again): the
 * idempotency key, the agent and its workspace's stop-all, its mandate, the current receipt key.
 */
async function readAhead(deps: AuthorizeDeps, a: Asked): Promise<void> {
  const { workspaceId, agentId } = a.caller;
  await Promise.all([
    a.idemKey === null ? undefined : deps.repo.idempotency(workspaceId, agentId, a.idemKey),
    readStanding(deps.store, workspaceId, agentId),
    deps.repo.rules(workspaceId, agentId),
    a.input.payment ? deps.receipts.currentKid() : undefined,
  ]);
}

/** A presented AP2 closed mandate, verified against the request (400/422 naming the fault), or null. */
async function presentedMandate(deps: AuthorizeDeps, a: Asked): Promise<Presented | null> {
  const { ap2 } = a.input;
  if (!ap2) return null;
  if (!deps.ap2) throw invalidField('ap2', '"ap2" is not accepted by this gate');
  return deps.ap2.verify(a.caller, { ap2, ...(a.input.payment ? { payment: a.input.payment } : {}) }, a.now);
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

function actionOf(a: Asked, verdict: Verdict, presented: Presented | null): ActionRecord {
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
    ...(presented ? { ap2Mandate: presented.mandateId } : {}),
    createdAt: isoAt(a.now),
    ...(a.challenge ? { challenge: a.challenge } : {}),
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
      ...(action.challenge ? { challenge: action.challenge } : {}),
      ...(action.ap2Mandate ? { ap2Mandate: action.ap2Mandate } : {}),
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
