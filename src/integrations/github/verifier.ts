import { createHash } from 'node:crypto';
import { verify } from '@octokit/webhooks-methods';
import { signatureRefused, type InboundVerifier } from '../../http/auth/signature.js';
import { routeWorkspace } from '../../http/inbound.js';
import type { IntegrationRegistry } from '../registry.js';

/**
 * The code host's signature (GitHub's own scheme, X-Hub-Signature-256) on `POST /v1/hooks/github/{wid}`.
 * Rules:
 * - Before the body is read: `X-Hub-Signature-256` is `sha256=<64 hex>`, `X-GitHub-Event` names
 *   an event and `X-GitHub-Delivery` is a delivery id; anything missing or malformed is 401.
 * - Over the raw bytes: the HMAC-SHA256 verifies (in constant time, by @octokit/webhooks-methods)
 *   against some secret in force for the workspace (during a rotation, the old one too). A body
 *   that is not valid UTF-8 is refused first: the library hashes a string, and two different
 *   byte strings must never decode to the same one.
 * - GitHub's scheme carries no timestamp and signs neither X-GitHub-Event nor X-GitHub-Delivery,
 *   so nothing here bounds a delivery's age or binds its labels: a replay is stopped by the hash
 *   of the body (and the delivery id), each processed once (service.ts), and a relabelled body by
 *   the route's check that it fits its event (http.ts).
 */
export interface GithubDelivery {
  workspaceId: string;
  event: string;
  delivery: string;
  /** SHA-256 (hex) of the exact bytes verified: what a replay under another delivery id shares. */
  bodyHash: string;
}

const SIGNATURE = /^sha256=[0-9a-f]{64}$/;
const EVENT = /^[a-z_]{1,64}$/;
const DELIVERY = /^[A-Za-z0-9-]{1,128}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function githubVerifier(
  registry: IntegrationRegistry,
): InboundVerifier<{ signature: string; event: string; delivery: string }> {
  return {
    kind: 'github',
    headers(request) {
      const signature = request.headers['x-hub-signature-256'];
      if (typeof signature !== 'string')
        throw signatureRefused(
          'This route takes a GitHub delivery signed with X-Hub-Signature-256; none was sent.',
          "Set the webhook's secret in GitHub to the one this workspace's github integration answered.",
        );
      if (!SIGNATURE.test(signature))
        throw signatureRefused(
          'The X-Hub-Signature-256 header is malformed; expected sha256=<64 hex digits>.',
          'Send the header exactly as GitHub computes it.',
        );
      const event = request.headers['x-github-event'];
      if (typeof event !== 'string' || !EVENT.test(event))
        throw signatureRefused(
          'The X-GitHub-Event header is missing or malformed.',
          'Send the event name GitHub sends, such as push.',
        );
      const delivery = request.headers['x-github-delivery'];
      if (typeof delivery !== 'string' || !DELIVERY.test(delivery))
        throw signatureRefused(
          'The X-GitHub-Delivery header is missing or malformed.',
          'Send the delivery id GitHub sends (a GUID).',
        );
      return { signature, event, delivery };
    },
    async body(request, raw, headers): Promise<GithubDelivery> {
      const w = routeWorkspace(request);
      const secrets = w ? await registry.secretsFor(w, 'github') : [];
      let text: string | null;
      try {
        text = raw.length > 0 ? utf8.decode(raw) : null;
      } catch {
        text = null;
      }
      let matched = false;
      if (text !== null) {
        // Every secret in force is tried (not only until one matches), so timing says nothing of which.
        for (const secret of secrets) if (await verify(secret, text, headers.signature)) matched = true;
      }
      if (!w || !matched)
        throw signatureRefused(
          'The X-Hub-Signature-256 signature does not match the body.',
          "Sign the exact bytes sent with the current secret of this workspace's github integration.",
        );
      return {
        workspaceId: w,
        event: headers.event,
        delivery: headers.delivery,
        bodyHash: createHash('sha256').update(raw).digest('hex'),
      };
    },
  };
}
