import { createHash } from 'node:crypto';
import { signatureRefused, type InboundVerifier } from '../../http/auth/signature.js';
import { routeWorkspace, type InboundSecrets } from '../../http/inbound.js';
import {
  parseSignatureHeader,
  signatureMatches,
  timestampFresh,
  SIGNATURE_TOLERANCE_SECONDS,
  type ParsedSignature,
} from '../../lib/svc-signature.js';

/**
 * A merchant's signature on `POST /v1/hooks/acp/{wid}` (the Agentic Commerce Protocol's checkout
 * webhooks, version 2026-04-17): `Merchant-Signature: t=<unix seconds>,v1=<64 hex>`, HMAC-SHA256
 * over `<t>.<raw body>` with the workspace's acp secret, the scheme of svc's own `svc-signature`.
 * Rules:
 * - Before the body is read: the header is there and well-formed (hex in either case), and its
 *   `t` is within five minutes of our clock, either way; else 401 saying which.
 * - Over the raw bytes, before any parse: some v1 verifies with a secret in force (during a
 *   rotation, the one before too), compared in constant time; else 401.
 * - What verified is said to the handler: the workspace, `t`, and the SHA-256 of the bytes, by
 *   which the service accepts each signed delivery once (service.ts).
 */
export interface AcpDelivery {
  workspaceId: string;
  t: number;
  /** SHA-256 (hex) of the exact bytes verified. */
  bodyHash: string;
}

const MAX_HEADER = 4096;

export function acpVerifier(registry: Pick<InboundSecrets, 'secretsFor'>): InboundVerifier<ParsedSignature> {
  return {
    kind: 'acp',
    headers(request, nowMs) {
      const header = request.headers['merchant-signature'];
      if (typeof header !== 'string' || header.length === 0)
        throw signatureRefused(
          'This route takes a merchant event signed with Merchant-Signature; none was sent.',
          'Sign each event with this workspace\'s acp secret: Merchant-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">.',
        );
      const parsed =
        header.length <= MAX_HEADER
          ? parseSignatureHeader(
              header.replace(/v1=([0-9A-Fa-f]{64})/g, (_m, hex: string) => `v1=${hex.toLowerCase()}`),
            )
          : undefined;
      if (!parsed)
        throw signatureRefused(
          'The Merchant-Signature header is malformed; expected t=<unix seconds>,v1=<64 hex digits>.',
          'Send the header exactly as the checkout webhooks specification shapes it.',
        );
      if (!timestampFresh(parsed.t, nowMs, SIGNATURE_TOLERANCE_SECONDS))
        throw signatureRefused(
          'The Merchant-Signature timestamp is more than five minutes from now.',
          "Sign each event at the moment it is sent, with the merchant's clock in sync.",
        );
      return parsed;
    },
    async body(request, raw, parsed): Promise<AcpDelivery> {
      const w = routeWorkspace(request);
      if (!w || raw.length === 0 || !signatureMatches(parsed, raw, await registry.secretsFor(w, 'acp')))
        throw signatureRefused(
          'The Merchant-Signature signature does not match the body.',
          "Sign the exact bytes sent with the current secret of this workspace's acp integration.",
        );
      return { workspaceId: w, t: parsed.t, bodyHash: createHash('sha256').update(raw).digest('hex') };
    },
  };
}
