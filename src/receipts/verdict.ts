import { systemClock, type Clock } from '../lib/clock.js';
import type { AnyReceiptClaims, ReceiptShape } from './protocol-verify.js';
import type { VerifyKeys, VerifyReason } from './verify.js';

/**
 * A receipt's verdict as `svc receipt verify` prints it, offline (./protocol-verify.ts against a
 * key set) or online (`POST /v1/verify`, which also says whether it was presented before): which
 * shape it has (svc's, an AP2 Payment Receipt, a signed ACP allowance) and what it says.
 */
export interface ReceiptVerdict {
  valid: boolean;
  shape?: ReceiptShape | null;
  claims: AnyReceiptClaims | null;
  reason: VerifyReason | string | null;
  problem?: string | null;
  kid?: string;
  replayed?: boolean;
}

/** Verifies here, against a key set; never throws. (The crypto loads only here, not for an online verdict.) */
export async function verdictOffline(
  token: string,
  jwks: VerifyKeys['jwks'],
  clock: Clock = systemClock,
): Promise<ReceiptVerdict> {
  const { verifyAnyReceipt } = await import('./protocol-verify.js');
  const result = await verifyAnyReceipt(token, { jwks }, clock.now());
  return {
    valid: result.valid,
    shape: result.shape,
    claims: result.claims,
    reason: result.reason,
    problem: result.problem,
    ...(result.kid === null ? {} : { kid: result.kid }),
  };
}

/** The server's answer, kept to the verdict's fields whatever else it holds. */
export function verdictOnline(answer: Partial<ReceiptVerdict>): ReceiptVerdict {
  return {
    valid: answer.valid === true,
    shape: answer.shape ?? null,
    claims: answer.claims ?? null,
    reason: answer.reason ?? null,
    problem: answer.problem ?? null,
    ...(typeof answer.kid === 'string' ? { kid: answer.kid } : {}),
    replayed: answer.replayed === true,
  };
}
