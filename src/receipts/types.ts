/**
 * The claims of a receipt (docs/gate.md#receipts) and the one check of their shape, shared by
 * signing (never sign what a verifier would call malformed) and verification.
 *
 * Rules enforced:
 * - iss, sub, act, typ, mer, jti are non-empty strings.
 * - amt is a positive safe integer (minor currency units).
 * - cur is three upper-case ASCII letters.
 * - hum is a boolean (true only when a person approved).
 * - iat and exp are safe integers (seconds since the epoch), not negative.
 * - challengeHash, when present, is the base64url SHA-256 (43 characters) of the 402 payment
 *   challenge the payment was read from.
 * - Claims not listed here are ignored, not refused, so that adding a claim later (the format
 *   changes only by adding) does not make older verifiers reject new receipts. The checked claims are a
 *   fresh object holding exactly the listed members, in this order.
 */

export interface ReceiptClaims {
  iss: string;
  sub: string;
  act: string;
  typ: string;
  amt: number;
  cur: string;
  mer: string;
  hum: boolean;
  iat: number;
  exp: number;
  jti: string;
  challengeHash?: string;
}

export type ClaimsCheck = { ok: true; claims: ReceiptClaims } | { ok: false; problem: string };

const STRING_CLAIMS = ['iss', 'sub', 'act', 'typ', 'mer', 'jti'] as const;
const TIME_CLAIMS = ['iat', 'exp'] as const;
const CURRENCY = /^[A-Z]{3}$/;

export function checkReceiptClaims(value: unknown): ClaimsCheck {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, problem: 'the claims are not a JSON object' };
  const v = value as Record<string, unknown>;
  for (const name of STRING_CLAIMS) {
    if (typeof v[name] !== 'string' || v[name] === '')
      return { ok: false, problem: `claim "${name}" must be a non-empty string` };
  }
  if (!Number.isSafeInteger(v.amt) || (v.amt as number) <= 0)
    return { ok: false, problem: 'claim "amt" must be a positive integer (minor units)' };
  if (typeof v.cur !== 'string' || !CURRENCY.test(v.cur))
    return { ok: false, problem: 'claim "cur" must be three upper-case letters' };
  if (typeof v.hum !== 'boolean') return { ok: false, problem: 'claim "hum" must be a boolean' };
  for (const name of TIME_CLAIMS) {
    if (!Number.isSafeInteger(v[name]) || (v[name] as number) < 0)
      return { ok: false, problem: `claim "${name}" must be an integer number of seconds` };
  }
  if (
    v.challengeHash !== undefined &&
    (typeof v.challengeHash !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(v.challengeHash))
  )
    return { ok: false, problem: 'claim "challengeHash" must be a base64url SHA-256 (43 characters)' };
  const claims: ReceiptClaims = {
    iss: v.iss as string,
    sub: v.sub as string,
    act: v.act as string,
    typ: v.typ as string,
    amt: v.amt as number,
    cur: v.cur as string,
    mer: v.mer as string,
    hum: v.hum as boolean,
    iat: v.iat as number,
    exp: v.exp as number,
    jti: v.jti as string,
    ...(v.challengeHash !== undefined ? { challengeHash: v.challengeHash as string } : {}),
  };
  return { ok: true, claims };
}
