import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The `svc-signature` scheme (docs/integrations.md): `t=<unix seconds>,v1=<hex>` where hex is
 * HMAC-SHA256 over `<t>.<raw body>` with a shared secret; five minutes of clock tolerance.
 * Used for the generic card issuer inbound and for every outbound webhook.
 */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export interface ParsedSignature {
  t: number;
  v1: string[];
}

export function signPayload(secret: string, body: Buffer | string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.`).update(body).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

export function parseSignatureHeader(header: string): ParsedSignature | undefined {
  let t: number | undefined;
  const v1: string[] = [];
  for (const part of header.split(',')) {
    const [k, v] = part.trim().split('=', 2) as [string, string | undefined];
    if (k === 't' && v && /^\d{1,12}$/.test(v)) t = Number(v);
    else if (k === 'v1' && v && /^[0-9a-f]{64}$/.test(v)) v1.push(v);
  }
  return t === undefined || v1.length === 0 ? undefined : { t, v1 };
}

export function timestampFresh(t: number, nowMs: number, tolerance = SIGNATURE_TOLERANCE_SECONDS): boolean {
  return Math.abs(nowMs / 1000 - t) <= tolerance;
}

/** True when any v1 of the header is the HMAC of the body under any of the secrets (rotation). */
export function signatureMatches(parsed: ParsedSignature, body: Buffer, secrets: readonly string[]): boolean {
  let ok = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(`${parsed.t}.`).update(body).digest();
    for (const candidate of parsed.v1) {
      // Every comparison runs, in constant time, whatever matched before.
      if (timingSafeEqual(expected, Buffer.from(candidate, 'hex'))) ok = true;
    }
  }
  return ok;
}
