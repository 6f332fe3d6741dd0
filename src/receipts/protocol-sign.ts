import { sign, type KeyObject } from 'node:crypto';
import { isoAt } from '../lib/clock.js';
import {
  ap2Reference,
  checkAcpClaims,
  checkAp2Claims,
  type AcpAllowanceClaims,
  type Ap2Payment,
  type Ap2ReceiptClaims,
} from './protocol-claims.js';

/**
 * Signing the protocol receipts (AP2 Payment Receipts, ACP allowances) with the current ES256
 * receipt key (src/signing/, use `receipt-es256`).
 *
 * Rules enforced:
 * - A compact JWS, protected header exactly {"alg":"ES256","kid":<kid>,"typ":<typ>}: `JWT` for
 *   an AP2 receipt (as AP2's own SDK signs them), `acp-allowance+jwt` for an allowance.
 * - The signature is ECDSA P-256 over SHA-256 in its JWS form (r || s, 64 bytes, RFC 7518 3.4).
 * - Claims that the shape's check refuses are never signed.
 */

/** What svc knows of an action a protocol receipt speaks for. */
export interface ProtocolSubject {
  id: string;
  agentId: string;
  payment: { amount: number; currency: string; merchant?: string };
  /** The gate's answer: an allow, or a deny with its signals and reason. */
  outcome: { decision: 'allow' } | { decision: 'deny'; signals: readonly string[]; reason: string };
}

/** The times and issuer a protocol receipt carries. */
export interface ProtocolTimes {
  issuer: string;
  atMs: number;
  ttlSeconds: number;
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

function signEs256(privateKey: KeyObject, kid: string, typ: string, claims: object): string {
  if (privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'ec')
    throw new TypeError('a protocol receipt is signed with a P-256 private key');
  const input = `${b64url({ alg: 'ES256', kid, typ })}.${b64url(claims)}`;
  const signature = sign('sha256', Buffer.from(input, 'ascii'), { key: privateKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

/** The closed payment svc decided, in AP2's field names. */
export function ap2PaymentOf(subject: ProtocolSubject): Ap2Payment {
  const merchant = subject.payment.merchant ?? '';
  return {
    transaction_id: subject.id,
    payee:
      merchant === ''
        ? { id: 'unnamed', name: 'unnamed' }
        : { id: merchant, name: merchant, website: `https://${merchant}` },
    payment_amount: { amount: subject.payment.amount, currency: subject.payment.currency },
  };
}

/** An AP2 v0.2 Payment Receipt: "Success" for an allowed payment, "Error" (a rejection receipt) for a denied one. */
export function signAp2Receipt(privateKey: KeyObject, kid: string, subject: ProtocolSubject, t: ProtocolTimes): string {
  const iat = Math.floor(t.atMs / 1000);
  const payment = ap2PaymentOf(subject);
  const outcome = subject.outcome;
  const claims = {
    status: outcome.decision === 'allow' ? 'Success' : 'Error',
    iss: t.issuer,
    iat,
    exp: iat + t.ttlSeconds,
    reference: ap2Reference(payment),
    payment_id: subject.id,
    ...(outcome.decision === 'allow'
      ? { psp_confirmation_id: subject.id, network_confirmation_id: subject.id }
      : {
          error: outcome.signals[0] ?? 'denied',
          error_description: outcome.reason || 'The gate denied this payment.',
        }),
    sub: subject.agentId,
    payment,
  };
  const checked = checkAp2Claims(claims);
  if (!checked.ok) throw new TypeError(`AP2 receipt claims refused: ${checked.problem}`);
  return signEs256(privateKey, kid, 'JWT', checked.claims satisfies Ap2ReceiptClaims);
}

/** A signed ACP allowance for the checkout session the request named: at most the allowed amount, until the receipt expires. */
export function signAcpAllowance(
  privateKey: KeyObject,
  kid: string,
  subject: ProtocolSubject,
  session: { checkoutSessionId: string; merchantId: string },
  t: ProtocolTimes,
): string {
  const iat = Math.floor(t.atMs / 1000);
  const exp = iat + t.ttlSeconds;
  const claims: AcpAllowanceClaims = {
    iss: t.issuer,
    sub: subject.agentId,
    iat,
    exp,
    jti: subject.id,
    allowance: {
      reason: 'one_time',
      max_amount: subject.payment.amount,
      currency: subject.payment.currency.toLowerCase(),
      checkout_session_id: session.checkoutSessionId,
      merchant_id: session.merchantId,
      expires_at: isoAt(exp * 1000),
    },
    risk_signals: [],
    metadata: {
      svc_action_id: subject.id,
      svc_agent_id: subject.agentId,
      ...(subject.payment.merchant ? { merchant_domain: subject.payment.merchant } : {}),
    },
  };
  const checked = checkAcpClaims(claims as unknown as Record<string, unknown>);
  if (!checked.ok) throw new TypeError(`ACP allowance claims refused: ${checked.problem}`);
  return signEs256(privateKey, kid, 'acp-allowance+jwt', checked.claims);
}
