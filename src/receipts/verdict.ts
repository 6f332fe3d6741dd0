import { systemClock, type Clock } from '../lib/clock.js';
import type { ReceiptClaims } from './types.js';
import type { VerifyKeys, VerifyReason } from './verify.js';

/**
 * A receipt's verdict as `svc receipt verify` prints it, offline (./verify.ts against a key set)
 * or online (`POST /v1/verify`, which also says whether it was presented before).
 */
export interface ReceiptVerdict {
  valid: boolean;
  claims: ReceiptClaims | null;
  reason: VerifyReason | string | null;
  kid?: string;
  replayed?: boolean;
}

/** Verifies here, against a key set; never throws. (The crypto loads only here, not for an online verdict.) */
export async function verdictOffline(
  token: string,
  jwks: VerifyKeys['jwks'],
  clock: Clock = systemClock,
): Promise<ReceiptVerdict> {
  const { verifyReceipt } = await import('./verify.js');
  const result = await verifyReceipt(token, { jwks }, clock.now());
  return {
    valid: result.valid,
    claims: result.claims,
    reason: result.reason,
    ...(result.kid === null ? {} : { kid: result.kid }),
  };
}

/** The server's answer, kept to the verdict's fields whatever else it holds. */
export function verdictOnline(answer: Partial<ReceiptVerdict>): ReceiptVerdict {
  return {
    valid: answer.valid === true,
    claims: answer.claims ?? null,
    reason: answer.reason ?? null,
    ...(typeof answer.kid === 'string' ? { kid: answer.kid } : {}),
    replayed: answer.replayed === true,
  };
}
