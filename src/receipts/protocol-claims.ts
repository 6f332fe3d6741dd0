import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/**
 * The receipts svc issues in the agent-commerce protocols' shapes (docs/ap2-receipts.md,
 * docs/acp.md), their claims and the one check of each shape, shared by signing (never sign
 * what a verifier would call malformed) and verification.
 *
 * Shapes followed:
 * - AP2 v0.2.0 (google-agentic-commerce/AP2, released 2026-04-28) Payment Receipt: `status`
 *   ("Success" | "Error"), `iss`, `iat`, `reference`, `payment_id`; a success adds
 *   `psp_confirmation_id` and `network_confirmation_id`, an error `error` and
 *   `error_description`. svc adds `exp`, `sub` (the agent) and `payment`, the closed payment it
 *   decided, in AP2's field names (`transaction_id`, `payee`, `payment_amount`).
 * - `reference`: base64url (no padding) of the SHA-256 of the RFC 8785 canonical JSON of
 *   `payment`, so that a holder of the receipt can recompute it.
 * - ACP 2026-04-17 (agentic-commerce-protocol/agentic-commerce-protocol) delegate payment: the
 *   `allowance` (`reason` "one_time", `max_amount` in minor units, `currency` lower case,
 *   `checkout_session_id`, `merchant_id`, `expires_at`) with `risk_signals` and `metadata` (string
 *   values) beside it, as the delegate payment request carries them, signed with `iss`, `sub`,
 *   `iat`, `exp`, `jti` (the action id).
 *
 * Claims not listed are ignored, not refused (the shapes change only by adding).
 */

export const AP2_VERSION = '0.2.0';
export const ACP_VERSION = '2026-04-17';

/** The closed payment an AP2 receipt is bound to, in AP2's field names. */
export interface Ap2Payment {
  transaction_id: string;
  payee: { id: string; name: string; website?: string };
  payment_amount: { amount: number; currency: string };
}

export interface Ap2ReceiptClaims {
  status: 'Success' | 'Error';
  iss: string;
  iat: number;
  exp: number;
  reference: string;
  payment_id: string;
  psp_confirmation_id?: string;
  network_confirmation_id?: string;
  error?: string;
  error_description?: string;
  sub: string;
  payment: Ap2Payment;
}

export interface AcpAllowance {
  reason: 'one_time';
  max_amount: number;
  currency: string;
  checkout_session_id: string;
  merchant_id: string;
  expires_at: string;
}

export interface AcpAllowanceClaims {
  iss: string;
  sub: string;
  iat: number;
  exp: number;
  jti: string;
  allowance: AcpAllowance;
  risk_signals: Array<{ type: string; score: number; action: string }>;
  metadata: Record<string, string>;
}

export type ProtocolShape = 'ap2.payment_receipt' | 'acp.allowance';

export type Checked<T> = { ok: true; claims: T } | { ok: false; problem: string };

/** base64url(SHA-256(RFC 8785 JSON)) of the closed payment: an AP2 receipt's `reference`. */
export function ap2Reference(payment: Ap2Payment): string {
  const text = canonicalize(payment);
  if (text === undefined) throw new TypeError('the payment has no JSON form');
  return createHash('sha256').update(text, 'utf8').digest('base64url');
}

/** Which protocol shape a payload has, by its members; null when none. */
export function protocolShapeOf(payload: Record<string, unknown>): ProtocolShape | null {
  if (isObject(payload.allowance)) return 'acp.allowance';
  if ((payload.status === 'Success' || payload.status === 'Error') && 'payment_id' in payload)
    return 'ap2.payment_receipt';
  return null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): v is string => typeof v === 'string' && v !== '' && v.length <= 1024;
const sentence = (v: unknown): v is string => typeof v === 'string' && v !== '' && v.length <= 4096;
const seconds = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const minor = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
const ISO_CURRENCY = /^[A-Z]{3}$/;

function checkPayment(v: unknown): Checked<Ap2Payment> {
  if (!isObject(v)) return { ok: false, problem: 'claim "payment" must be an object' };
  if (!text(v.transaction_id)) return { ok: false, problem: 'claim "payment.transaction_id" must be a string' };
  const payee = v.payee;
  if (!isObject(payee) || !text(payee.id) || !text(payee.name))
    return { ok: false, problem: 'claim "payment.payee" must hold an id and a name' };
  if (payee.website !== undefined && !text(payee.website))
    return { ok: false, problem: 'claim "payment.payee.website" must be a string' };
  const amount = v.payment_amount;
  if (
    !isObject(amount) ||
    !minor(amount.amount) ||
    typeof amount.currency !== 'string' ||
    !ISO_CURRENCY.test(amount.currency)
  )
    return {
      ok: false,
      problem: 'claim "payment.payment_amount" must hold amount (minor units) and currency (three upper-case letters)',
    };
  return {
    ok: true,
    claims: {
      transaction_id: v.transaction_id,
      payee: { id: payee.id, name: payee.name, ...(payee.website === undefined ? {} : { website: payee.website }) },
      payment_amount: { amount: amount.amount, currency: amount.currency },
    },
  };
}

/** An AP2 Payment Receipt's claims: the members AP2 v0.2 requires for its status, and svc's own. */
export function checkAp2Claims(v: Record<string, unknown>): Checked<Ap2ReceiptClaims> {
  if (v.status !== 'Success' && v.status !== 'Error')
    return { ok: false, problem: 'claim "status" must be "Success" or "Error"' };
  for (const name of ['iss', 'reference', 'payment_id', 'sub'] as const)
    if (!text(v[name])) return { ok: false, problem: `claim "${name}" must be a non-empty string` };
  for (const name of ['iat', 'exp'] as const)
    if (!seconds(v[name])) return { ok: false, problem: `claim "${name}" must be an integer number of seconds` };
  const names =
    v.status === 'Success'
      ? (['psp_confirmation_id', 'network_confirmation_id'] as const)
      : (['error', 'error_description'] as const);
  for (const name of names)
    if (!(name === 'error_description' ? sentence(v[name]) : text(v[name])))
      return { ok: false, problem: `claim "${name}" must be a non-empty string when status is ${v.status as string}` };
  const payment = checkPayment(v.payment);
  if (!payment.ok) return payment;
  const claims: Ap2ReceiptClaims = {
    status: v.status,
    iss: v.iss as string,
    iat: v.iat as number,
    exp: v.exp as number,
    reference: v.reference as string,
    payment_id: v.payment_id as string,
    ...(v.status === 'Success'
      ? {
          psp_confirmation_id: v.psp_confirmation_id as string,
          network_confirmation_id: v.network_confirmation_id as string,
        }
      : { error: v.error as string, error_description: v.error_description as string }),
    sub: v.sub as string,
    payment: payment.claims,
  };
  return { ok: true, claims };
}

/** A signed ACP allowance's claims: the allowance as ACP 2026-04-17 defines it, and the token's own. */
export function checkAcpClaims(v: Record<string, unknown>): Checked<AcpAllowanceClaims> {
  for (const name of ['iss', 'sub', 'jti'] as const)
    if (!text(v[name])) return { ok: false, problem: `claim "${name}" must be a non-empty string` };
  for (const name of ['iat', 'exp'] as const)
    if (!seconds(v[name])) return { ok: false, problem: `claim "${name}" must be an integer number of seconds` };
  const a = v.allowance;
  if (!isObject(a)) return { ok: false, problem: 'claim "allowance" must be an object' };
  if (a.reason !== 'one_time') return { ok: false, problem: 'allowance "reason" must be "one_time"' };
  if (!minor(a.max_amount))
    return { ok: false, problem: 'allowance "max_amount" must be a positive integer (minor units)' };
  if (typeof a.currency !== 'string' || !/^[a-z]{3}$/.test(a.currency))
    return { ok: false, problem: 'allowance "currency" must be three lower-case letters' };
  for (const name of ['checkout_session_id', 'merchant_id'] as const)
    if (!text(a[name])) return { ok: false, problem: `allowance "${name}" must be a non-empty string` };
  if (typeof a.merchant_id === 'string' && a.merchant_id.length > 256)
    return { ok: false, problem: 'allowance "merchant_id" may be at most 256 characters' };
  if (typeof a.expires_at !== 'string' || Number.isNaN(Date.parse(a.expires_at)))
    return { ok: false, problem: 'allowance "expires_at" must be an ISO 8601 time' };
  const signals = v.risk_signals;
  if (
    !Array.isArray(signals) ||
    !signals.every((s) => isObject(s) && text(s.type) && Number.isSafeInteger(s.score) && text(s.action))
  )
    return { ok: false, problem: 'claim "risk_signals" must be a list of { type, score, action }' };
  const metadata = v.metadata;
  if (!isObject(metadata) || !Object.values(metadata).every((m) => typeof m === 'string'))
    return { ok: false, problem: 'claim "metadata" must be an object of strings' };
  return {
    ok: true,
    claims: {
      iss: v.iss as string,
      sub: v.sub as string,
      iat: v.iat as number,
      exp: v.exp as number,
      jti: v.jti as string,
      allowance: {
        reason: 'one_time',
        max_amount: a.max_amount,
        currency: a.currency,
        checkout_session_id: a.checkout_session_id as string,
        merchant_id: a.merchant_id as string,
        expires_at: a.expires_at,
      },
      risk_signals: (signals as Array<Record<string, unknown>>).map((s) => ({
        type: s.type as string,
        score: s.score as number,
        action: s.action as string,
      })),
      metadata: { ...(metadata as Record<string, string>) },
    },
  };
}
