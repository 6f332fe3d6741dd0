import { signatureRefused, type InboundVerifier } from '../../http/auth/signature.js';
import type { Clock } from '../../lib/clock.js';
import { routeWorkspace } from '../../http/inbound.js';
import type { IntegrationRegistry } from '../registry.js';

/**
 * The payment provider's signature (docs/integrations.md): Stripe's `Stripe-Signature` header,
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">[,v1=…][,v0=…]`, verified by the
 * stripe package's own `webhooks.signature.verifyHeader` with the workspace's signing secrets.
 * Rules:
 * 1. Before the body is read: the header is there, well-formed (one `t`, at least one `v1` of 64
 *    hex digits) and its `t` is within TOLERANCE_S of our clock, either way (Stripe's own check
 *    refuses only the old; a signature from the future is refused here too).
 * 2. Over the raw bytes, before any parse: they must be UTF-8 (Stripe's check decodes them to
 *    text first, so bytes that are not would be compared after replacement), and the signature
 *    must verify with a secret in force: the workspace's own (the current one, or during a
 *    rotation the one before, registry.ts), or the operator's billing secret (settings
 *    `billing.stripeSigningSecret`, and `billing.stripePreviousSigningSecret` during its
 *    rotation). Stripe's check compares in constant time; its errors never leave this file.
 * 3. Which verified is said to the handler (`verified(request).signers`): `operator` when an
 *    operator's billing secret did, `workspace` when one of the workspace's did (both when the
 *    two are the same account). Only the operator's changes a plan; only the workspace's decides
 *    its cards (stripe/service.ts).
 * 4. The operator's billing endpoint (`POST /v1/hooks/stripe/billing`, strategy `stripe:billing`)
 *    has the same rules 1 and 2 with the operator's billing secrets only; with none configured it
 *    refuses every request at rule 1. What verified there is always `operator`.
 * Any failure is `401 unauthenticated`; what was wrong is said in plain words, never the secret.
 */
export const TOLERANCE_S = 300;
const MAX_HEADER = 4096;
const utf8 = new TextDecoder('utf-8', { fatal: true });

interface StripeHeader {
  header: string;
  t: number;
}

/** Who signed a verified delivery: the operator's billing endpoint, or the workspace's own Stripe account. */
export type StripeSigner = 'operator' | 'workspace';
export interface StripeVerified {
  workspaceId: string;
  signers: StripeSigner[];
}
/** What the operator's billing endpoint verified: always the operator's secret. */
export interface StripeBillingVerified {
  signers: ['operator'];
}

/** Rule 1: the Stripe-Signature header, read before the body (the same on every Stripe route). */
function stripeHeader(request: Parameters<InboundVerifier['headers']>[0], nowMs: number): StripeHeader {
  const header = request.headers['stripe-signature'];
  if (typeof header !== 'string' || header.length === 0)
    throw signatureRefused('This route takes a request signed by Stripe (Stripe-Signature header); none was sent.');
  const malformed = () =>
    signatureRefused('The Stripe-Signature header is malformed; expected t=<unix seconds>,v1=<hex>.');
  if (header.length > MAX_HEADER) throw malformed();
  const items = header.split(',').map((item) => {
    const at = item.indexOf('=');
    return at < 0 ? ['', item] : [item.slice(0, at).trim(), item.slice(at + 1).trim()];
  });
  const ts = items.filter(([k]) => k === 't').map(([, v]) => v!);
  const v1 = items.filter(([k]) => k === 'v1').map(([, v]) => v!);
  if (ts.length !== 1 || !/^\d{1,12}$/.test(ts[0]!) || v1.length === 0 || !v1.every((s) => /^[0-9a-f]{64}$/.test(s)))
    throw malformed();
  const t = Number(ts[0]);
  if (Math.abs(Math.floor(nowMs / 1000) - t) > TOLERANCE_S) {
    throw signatureRefused(
      'The signature timestamp is more than five minutes from now.',
      "Deliver each event as Stripe signs it, with this server's clock in sync.",
    );
  }
  return { header, t };
}

/**
 * Rule 2: which of `secrets` sign the raw bytes, by the stripe package's check and our clock; a
 * body that is not UTF-8, or empty, is signed by none. The stripe package (some two hundred
 * modules) is imported on the first signed delivery, not when the server starts.
 */
async function signedBy(raw: Buffer, header: string, clock: Clock): Promise<(secret: string) => boolean> {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    return () => false;
  }
  if (text.length === 0) return () => false;
  const now = clock.now();
  const { default: Stripe } = await import('stripe');
  return (secret) => {
    try {
      return Stripe.webhooks.signature!.verifyHeader(text, header, secret, TOLERANCE_S, undefined, now);
    } catch {
      return false;
    }
  };
}

export function stripeVerifier(
  registry: IntegrationRegistry,
  clock: Clock,
  billingSecrets: readonly string[] = [],
): InboundVerifier<StripeHeader> {
  return {
    kind: 'stripe',
    headers: stripeHeader,
    async body(request, raw, { header }) {
      const w = routeWorkspace(request);
      const refused = () =>
        signatureRefused(
          'The signature does not match the body.',
          'Send the exact bytes Stripe signed, to the workspace whose signing secret signed them.',
        );
      if (!w) throw refused();
      const verifies = await signedBy(raw, header, clock);
      const signers: StripeSigner[] = [
        ...(billingSecrets.some(verifies) ? ['operator' as const] : []),
        ...((await registry.secretsFor(w, 'stripe')).some(verifies) ? ['workspace' as const] : []),
      ];
      if (signers.length === 0) throw refused();
      return { workspaceId: w, signers } satisfies StripeVerified;
    },
  };
}

/** The strategy variant of the operator's billing endpoint, `POST /v1/hooks/stripe/billing`. */
export const BILLING_VARIANT = 'billing';

/**
 * The operator's billing endpoint (`POST /v1/hooks/stripe/billing`): the same header rules and
 * check, with the operator's billing secrets only (no workspace's secret verifies here). With no
 * billing secret configured, every request is refused at the header step, before its body is read.
 */
export function stripeBillingVerifier(clock: Clock, billingSecrets: readonly string[]): InboundVerifier<StripeHeader> {
  return {
    kind: 'stripe',
    variant: BILLING_VARIANT,
    headers(request, nowMs) {
      if (billingSecrets.length === 0) {
        throw signatureRefused(
          'This server takes no billing events: no billing signing secret is configured.',
          "Set billing.stripeSigningSecret (SVC_BILLING_STRIPE_SIGNING_SECRET) to the signing secret of the operator's Stripe endpoint.",
        );
      }
      return stripeHeader(request, nowMs);
    },
    async body(_request, raw, { header }) {
      if (!billingSecrets.some(await signedBy(raw, header, clock))) {
        throw signatureRefused(
          'The signature does not match the body.',
          "Send the exact bytes Stripe signed, signed with the operator's billing signing secret.",
        );
      }
      return { signers: ['operator'] } satisfies StripeBillingVerified;
    },
  };
}
