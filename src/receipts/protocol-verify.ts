import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import {
  ap2Reference,
  checkAcpClaims,
  checkAp2Claims,
  protocolShapeOf,
  type AcpAllowanceClaims,
  type Ap2ReceiptClaims,
  type ProtocolShape,
} from './protocol-claims.js';
import { jsonObject, MAX_RECEIPT_LENGTH, verifyReceipt, type VerifyKeys, type VerifyReason } from './verify.js';
import type { ReceiptClaims } from './types.js';

/**
 * Verifying any receipt svc issues, offline, against a JSON Web Key Set: svc's own (EdDSA,
 * ./verify.ts), an AP2 Payment Receipt or a signed ACP allowance (ES256). The one answer of
 * `POST /v1/verify` and `svc receipt verify`; it never throws.
 *
 * Rules enforced, in this order (the first that fails is the reason; `problem` says it in words):
 * 1. The shape is read from the payload before any key: `allowance` makes an ACP allowance,
 *    `status` with `payment_id` an AP2 receipt, anything else svc's receipt (./verify.ts's rules).
 * 2. `malformed`: not three base64url segments within 8 KB, a header or payload that is no JSON
 *    object, `crit` or `b64` in the header, or the shape's claims missing or of the wrong type
 *    (./protocol-claims.ts).
 * 3. `bad_signature`: the header's alg is anything but ES256 (`none`, HS256 with the public key as
 *    its secret, EdDSA, RS256, ...): no other algorithm reaches a key. The signature must be the one
 *    base64url spelling of 64 bytes (r || s), else `malformed`.
 * 4. `unknown_key`: no key of the set has the header's kid with kty EC, crv P-256, use "sig" (and
 *    alg ES256 when stated): an Ed25519 key never verifies an ES256 token, nor the reverse. A kid
 *    revoked and absent gives `revoked`.
 * 5. `bad_signature`: ECDSA P-256 SHA-256 over the ASCII of `header.payload` fails.
 * 6. `revoked`, then `expired` (now >= exp, no leeway), as for svc's receipts.
 * 7. `malformed`: an AP2 receipt whose `reference` is not the hash of the payment it carries.
 */

export type ReceiptShape = 'svc' | ProtocolShape;

export type AnyReceiptClaims = ReceiptClaims | Ap2ReceiptClaims | AcpAllowanceClaims;

export interface AnyVerifyResult {
  valid: boolean;
  /** Which shape the receipt has; null when it is not even a token. */
  shape: ReceiptShape | null;
  claims: AnyReceiptClaims | null;
  reason: VerifyReason | null;
  /** What is wrong, in a sentence; null when valid. */
  problem: string | null;
  kid: string | null;
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;
const SIGNATURE = /^[A-Za-z0-9_-]*$/;

const PROBLEMS: Record<VerifyReason, string> = {
  malformed: 'not a well-formed receipt',
  bad_signature: 'the signature does not verify with the key the receipt names',
  unknown_key: 'the key set holds no receipt key with the id the receipt names',
  expired: 'the receipt has expired',
  revoked: 'the key that signed the receipt has been revoked',
};

/** A segment of base64url characters only, decoded to a JSON object; null otherwise. */
function segmentObject(segment: string | undefined): Record<string, unknown> | null {
  return segment !== undefined && SEGMENT.test(segment) ? jsonObject(segment) : null;
}

/** Any shape svc issues: detected from the payload, then verified by its own rules. */
export async function verifyAnyReceipt(token: string, keys: VerifyKeys, nowMs: number): Promise<AnyVerifyResult> {
  try {
    const payload =
      typeof token === 'string' && token.length <= MAX_RECEIPT_LENGTH ? segmentObject(token.split('.')[1]) : null;
    const shape = payload ? protocolShapeOf(payload) : null;
    if (shape) return await verifyProtocol(token, shape, keys, nowMs);
    const r = await verifyReceipt(token, keys, nowMs);
    return {
      valid: r.valid,
      shape: payload ? 'svc' : null,
      claims: r.claims,
      reason: r.reason,
      problem: r.reason === null ? null : svcProblem(r.reason, token, keys, r.kid),
      kid: r.kid,
    };
  } catch {
    return { valid: false, shape: null, claims: null, reason: 'malformed', problem: PROBLEMS.malformed, kid: null };
  }
}

/** svc's receipt's reason in words, naming an ES256 key presented as an EdDSA one and a refused alg. */
function svcProblem(reason: VerifyReason, token: string, keys: VerifyKeys, kid: string | null): string {
  const header = segmentObject(token.split('.')[0]);
  const alg = header?.alg;
  if (reason === 'bad_signature' && alg !== 'EdDSA')
    return `svc's receipts are signed with EdDSA; this one says alg ${JSON.stringify(alg ?? null)}, which is refused`;
  if (reason === 'unknown_key' && kid !== null && esKey(keys.jwks, kid))
    return `key ${kid} is an ES256 key; an EdDSA receipt cannot be verified with it`;
  return PROBLEMS[reason];
}

async function verifyProtocol(
  token: string,
  shape: ProtocolShape,
  keys: VerifyKeys,
  nowMs: number,
): Promise<AnyVerifyResult> {
  let kid: string | null = null;
  const no = (reason: VerifyReason, problem: string = PROBLEMS[reason]): AnyVerifyResult => ({
    valid: false,
    shape,
    claims: null,
    reason,
    problem,
    kid,
  });
  const parts = token.split('.');
  const [encodedHeader = '', encodedPayload = '', signature = ''] = parts;
  if (parts.length !== 3 || !SIGNATURE.test(signature)) return no('malformed');
  const header = segmentObject(encodedHeader);
  const payload = segmentObject(encodedPayload);
  if (!header || !payload) return no('malformed');
  kid = typeof header.kid === 'string' ? header.kid : null;
  if ('crit' in header || 'b64' in header)
    return no('malformed', 'the header asks for an extension (crit, b64) that is not understood');
  const checked = shape === 'acp.allowance' ? checkAcpClaims(payload) : checkAp2Claims(payload);
  if (!checked.ok) return no('malformed', checked.problem);
  const name = shape === 'acp.allowance' ? 'an ACP allowance' : 'an AP2 receipt';
  if (header.alg !== 'ES256')
    return no(
      'bad_signature',
      `${name} is signed with ES256; this one says alg ${JSON.stringify(header.alg ?? null)}, which is refused`,
    );
  const signatureBytes = Buffer.from(signature, 'base64url');
  if (signatureBytes.length !== 64 || signatureBytes.toString('base64url') !== signature)
    return no('malformed', 'an ES256 signature is 64 bytes in one base64url spelling');
  if (kid === null) return no('unknown_key', 'the header names no key (kid)');
  const revoked = keys?.revokedKids?.has(kid) === true;
  const key = esKey(keys?.jwks, kid);
  if (!key) {
    if (revoked) return no('revoked');
    return no(
      'unknown_key',
      edKey(keys?.jwks, kid)
        ? `key ${kid} is an Ed25519 key; ${name} (ES256) cannot be verified with it`
        : PROBLEMS.unknown_key,
    );
  }
  const input = Buffer.from(`${encodedHeader}.${encodedPayload}`, 'latin1');
  if (!(await verifyEs256(input, key, signatureBytes)))
    return no(
      'bad_signature',
      'the signature does not verify: the receipt was changed, or not signed by the key it names',
    );
  if (revoked) return no('revoked');
  if (!(nowMs < checked.claims.exp * 1000)) return no('expired');
  if ('reference' in checked.claims && checked.claims.reference !== ap2Reference(checked.claims.payment))
    return no('malformed', 'the AP2 receipt\'s "reference" is not the hash of the payment it carries');
  return { valid: true, shape, claims: checked.claims, reason: null, problem: null, kid };
}

function verifyEs256(data: Buffer, key: KeyObject, signature: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature, (err, ok) => resolve(!err && ok));
  });
}

function jwksEntries(jwks: VerifyKeys['jwks'] | undefined): Array<Record<string, unknown>> {
  const keys = Array.isArray(jwks?.keys) ? jwks.keys : [];
  return keys.filter((k): k is Record<string, unknown> => typeof k === 'object' && k !== null);
}

const edKey = (jwks: VerifyKeys['jwks'] | undefined, kid: string) =>
  jwksEntries(jwks).some((k) => k.kid === kid && k.kty === 'OKP');

/** The ES256 receipt key with this kid, as a public KeyObject; null when there is none. */
function esKey(jwks: VerifyKeys['jwks'] | undefined, kid: string): KeyObject | null {
  for (const jwk of jwksEntries(jwks)) {
    if (jwk.kid !== kid || jwk.kty !== 'EC' || jwk.crv !== 'P-256' || jwk.use !== 'sig') continue;
    if (typeof jwk.x !== 'string' || typeof jwk.y !== 'string') continue;
    if (jwk.alg !== undefined && jwk.alg !== 'ES256') continue;
    if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify'))) continue;
    try {
      return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y }, format: 'jwk' });
    } catch {
      continue;
    }
  }
  return null;
}
