import { isDeepStrictEqual } from 'node:util';
import { AppError } from '../errors/app-error.js';
import {
  checkDisclosures,
  checkTimes,
  claimsOf,
  cnfThumbprint,
  contentOf,
  invalid,
  KB_MAX_AGE_S,
  OPEN_PAYMENT_VCT,
  CLOSED_PAYMENT_VCT,
  readToken,
  sha256,
  SKEW_S,
  splitChain,
  verifyHolder,
  verifyIssuer,
} from './credential.js';
import { payeeHost } from './constraints.js';
import { audienceOf } from './audience.js';
import type { Ap2Repo } from './repo.js';

/**
 * A closed Payment Mandate presented at authorize (docs/ap2.md#presenting-a-closed-mandate), as an
 * ordered list of checks; all but the last two run before the decision's write, and store nothing:
 *  1. `chainOf`: two SD-JWTs joined by `~~`, each readable.
 *  2. `openMandate`: the open mandate verifies as at import (trusted issuer, ES256, disclosures,
 *     times, vct) and is one imported for this agent; its `cnf` is the agent's holder key.
 *  3. `closedMandate`: signed by that key (`typ` kb+sd-jwt), its own disclosures referenced, `aud`
 *     this workspace's audience, a `nonce`, `iat` at most KB_MAX_AGE_S old, `sd_hash` over the open
 *     mandate as presented; its content a `mandate.payment.1` without `cnf`.
 *  4. `matchesRequest`: the closed mandate's amount, currency and payee are the request's payment;
 *     what the open mandate set itself is unchanged; instruments and PISPs are among those allowed.
 *  In the decision's write:
 *  5. `admitInWrite`: the nonce unused (else 409 key_binding_replayed), and the open mandate presentable
 *     (one presentation at a time: 409 presentation_refused).
 *  6. `presentedInWrite`: the nonce kept for its lifetime, the presentation noted on the mandate.
 */

/** The `ap2` member of an authorize body. */
export interface Ap2Input {
  mandate: string;
  /** The refused action of the previous presentation of the same open mandate, when there was one. */
  refusal?: string;
}

/** A verified presentation, carried from before the write into it. */
export interface Presented {
  mandateId: string;
  nonceHash: string;
  /** Until when (ms) its nonce must stay used: past this its `iat` is too old anyway. */
  nonceUntil: number;
  refusal: string | null;
}

const F = 'ap2.mandate';

export async function verifyPresentation(
  repo: Ap2Repo,
  c: { workspaceId: string; agentId: string },
  input: { ap2: Ap2Input; payment?: { amount: number; currency: string; merchant?: string } },
  nowMs: number,
): Promise<Presented> {
  const [openText, closedText] = splitChain(input.ap2.mandate, F, 2) as [string, string];
  const open = await readToken(openText, F);
  const closed = await readToken(closedText, F);
  const settings = await repo.settings(c.workspaceId);
  await verifyIssuer(open, settings?.issuers ?? [], nowMs, F);
  checkDisclosures(open, F);
  checkTimes(open.payload, nowMs, F);
  const openContent = contentOf(await claimsOf(open), OPEN_PAYMENT_VCT, F);
  checkTimes(openContent, nowMs, F);
  const credentialHash = sha256(open.jwt);
  const imported = (await repo.mandates(c.workspaceId, c.agentId)).find((m) => m.credentialHash === credentialHash);
  if (!imported) throw invalid(F, `${F}: its open mandate was not imported for this agent (import it first)`);
  const holder = await repo.holderKey(c.workspaceId, c.agentId);
  if (!holder || (await cnfThumbprint(openContent, F)) !== holder.thumbprint)
    throw invalid(F, `${F}: the open mandate is bound (cnf) to another key than the agent's holder key`);
  await verifyHolder(closed, holder.jwk, F);
  checkDisclosures(closed, F);
  const nonce = keyBinding(closed.payload, openText, open.jwt, c.workspaceId, nowMs);
  const closedContent = contentOf(await claimsOf(closed), CLOSED_PAYMENT_VCT, F);
  if (closedContent.cnf !== undefined) throw invalid(F, `${F}: a closed mandate must not carry cnf`);
  matchesRequest(openContent, closedContent, input.payment);
  return {
    mandateId: imported.id,
    nonceHash: sha256(nonce),
    nonceUntil: ((closed.payload.iat as number) + KB_MAX_AGE_S + SKEW_S) * 1000,
    refusal: input.ap2.refusal ?? null,
  };
}

/** `aud`, `nonce`, `iat` freshness and the binding hash of the closed mandate; returns the nonce. */
function keyBinding(
  kb: Record<string, unknown>,
  openText: string,
  openJwt: string,
  wid: string,
  nowMs: number,
): string {
  const aud = audienceOf(wid);
  if (kb.aud !== aud) throw invalid(F, `${F}: the closed mandate's aud must be ${aud}`);
  if (typeof kb.nonce !== 'string' || kb.nonce.length < 8 || kb.nonce.length > 512)
    throw invalid(F, `${F}: the closed mandate needs a nonce of 8 to 512 characters`);
  const now = Math.floor(nowMs / 1000);
  if (typeof kb.iat !== 'number' || !Number.isFinite(kb.iat)) throw invalid(F, `${F}: the closed mandate has no iat`);
  if (kb.iat > now + SKEW_S) throw invalid(F, `${F}: the closed mandate's iat is in the future`);
  if (now - kb.iat > KB_MAX_AGE_S)
    throw invalid(F, `${F}: the closed mandate is stale (iat over ${KB_MAX_AGE_S} s ago)`);
  const bound =
    (kb.sd_hash !== undefined && kb.sd_hash === sha256(openText)) ||
    (kb.sd_hash === undefined && kb.issuer_jwt_hash !== undefined && kb.issuer_jwt_hash === sha256(openJwt));
  if (!bound)
    throw invalid(
      F,
      `${F}: the closed mandate's sd_hash is not the hash of the open mandate presented (wrongly bound)`,
    );
  return kb.nonce;
}

const mismatch = (field: string, message: string): AppError =>
  new AppError('mandate_mismatch', { details: { errors: [{ field, message }] } });

/** The closed mandate pays what the request pays, keeps what the open one set, within instruments and PISPs. */
function matchesRequest(
  open: Record<string, unknown>,
  closed: Record<string, unknown>,
  payment: { amount: number; currency: string; merchant?: string } | undefined,
): void {
  if (!payment) throw mismatch('payment', 'a closed payment mandate is presented with a payment: payment is required');
  const amount = closed.payment_amount as { amount?: unknown; currency?: unknown } | undefined;
  if (amount?.amount !== payment.amount || amount?.currency !== payment.currency)
    throw mismatch(
      'payment.amount',
      `the closed mandate pays ${JSON.stringify(amount ?? null)}, not ${payment.amount} ${payment.currency}`,
    );
  const host = payeeHost(closed.payee, 'payee');
  if (host !== payment.merchant)
    throw mismatch('payment.merchant', `the closed mandate pays ${host}, not ${payment.merchant}`);
  for (const claim of ['payee', 'payment_amount', 'payment_instrument', 'pisp', 'execution_date'])
    if (open[claim] !== undefined && !isDeepStrictEqual(open[claim], closed[claim]))
      throw mismatch(F, `the closed mandate changes ${claim}, which the open mandate set`);
  const constraints = Array.isArray(open.constraints) ? (open.constraints as Array<Record<string, unknown>>) : [];
  for (const [type, claim] of [
    ['payment.allowed_payment_instruments', 'payment_instrument'],
    ['payment.allowed_pisps', 'pisp'],
  ] as const) {
    const allowed = constraints.find((k) => k.type === type)?.allowed;
    if (Array.isArray(allowed) && !allowed.some((a) => isDeepStrictEqual(a, closed[claim])))
      throw mismatch(F, `the closed mandate's ${claim} is not among those ${type} allows (as presented)`);
  }
}

/** Step 5: an unused nonce, and the open mandate presentable now. Only inside store.write(). */
export async function admitInWrite(
  repo: Ap2Repo,
  c: { workspaceId: string; agentId: string },
  p: Presented,
  nowMs: number,
): Promise<void> {
  const used = await repo.nonce(c.workspaceId, p.nonceHash);
  if (used !== undefined && used > nowMs)
    throw new AppError('key_binding_replayed', {
      message: 'This key-binding JWT (its nonce) was presented before; nothing was decided.',
    });
  const mandate = await repo.mandate(c.workspaceId, c.agentId, p.mandateId);
  const last = mandate?.lastPresentation;
  if (!mandate || !last) return;
  const previous = await repo.action(c.workspaceId, last.actionId);
  const refuse = (message: string) => {
    throw new AppError('presentation_refused', { message, details: { reason: message } });
  };
  if (!previous) return;
  if (previous.status === 'pending_approval')
    refuse(`The previous presentation of ${mandate.id} (action ${previous.id}) still waits for approval.`);
  if (previous.status === 'denied' && p.refusal !== previous.id)
    refuse(
      `The previous presentation of ${mandate.id} was refused (action ${previous.id}): name that refusal in ap2.refusal.`,
    );
  if (previous.status !== 'denied' && !mandate.recurring)
    refuse(
      `${mandate.id} was used (action ${previous.id}); without payment.agent_recurrence an open mandate closes once.`,
    );
}

/** Step 6: the nonce kept, the presentation noted. Only inside store.write(). */
export async function presentedInWrite(
  repo: Ap2Repo,
  c: { workspaceId: string; agentId: string },
  p: Presented,
  actionId: string,
  at: string,
): Promise<void> {
  await repo.useNonce(c.workspaceId, p.nonceHash, p.nonceUntil);
  const mandate = await repo.mandate(c.workspaceId, c.agentId, p.mandateId);
  if (mandate) await repo.putMandate({ ...mandate, lastPresentation: { actionId, at } });
}
