import { createHmac, timingSafeEqual } from 'node:crypto';
import Joi from 'joi';
import { signatureRefused, type InboundVerifier } from '../http/auth/signature.js';
import type { IntegrationRegistry } from '../integrations/registry.js';
import { timestampFresh } from '../lib/svc-signature.js';

/**
 * Slack's request signing, v0 (docs/integrations.md), for `POST /v1/hooks/slack`, whose address names
 * no workspace.
 * Rules:
 * - Headers, before the body is read: `X-Slack-Signature: v0=<64 hex>` and
 *   `X-Slack-Request-Timestamp: <unix seconds>`, within five minutes of now.
 * - Body: HMAC-SHA256(signing secret, "v0:" + timestamp + ":" + raw body) is computed for every
 *   secret in force of every workspace that set Slack up, and compared in constant time with
 *   each, every comparison made whatever matched before. No match: 401.
 * - The signature is then claimed in the store: a replay is refused (401) across restarts.
 * - What the handler reads: every workspace whose secret matched (one Slack app may serve more
 *   than one workspace); the button token then picks one of them.
 */
export interface SlackHeaders {
  timestamp: string;
  mac: Buffer;
}

export function slackVerifier(
  registry: IntegrationRegistry,
  claim: (signature: string) => Promise<boolean>,
): InboundVerifier<SlackHeaders> {
  return {
    kind: 'slack',
    headers(request, nowMs) {
      const signature = request.headers['x-slack-signature'];
      const timestamp = request.headers['x-slack-request-timestamp'];
      if (typeof signature !== 'string' || typeof timestamp !== 'string') {
        throw signatureRefused(
          'This route takes requests signed by Slack (X-Slack-Signature and X-Slack-Request-Timestamp); they were not both sent.',
        );
      }
      const hex = /^v0=([0-9a-f]{64})$/.exec(signature)?.[1];
      if (!hex) throw signatureRefused('The X-Slack-Signature header is malformed; expected v0=<64 hex digits>.');
      if (!/^\d{1,12}$/.test(timestamp))
        throw signatureRefused('The X-Slack-Request-Timestamp header is malformed; expected unix seconds.');
      if (!timestampFresh(Number(timestamp), nowMs))
        throw signatureRefused(
          'The Slack request timestamp is more than five minutes from now.',
          "Sign each request at the moment it is sent, with the sender's clock in sync.",
        );
      return { timestamp, mac: Buffer.from(hex, 'hex') };
    },
    async body(request, raw, { timestamp, mac }) {
      const matched = new Set<string>();
      const workspaces = await registry.workspacesWith('slack');
      const secrets = await Promise.all(workspaces.map((wid) => registry.secretsFor(wid, 'slack')));
      for (const [i, wid] of workspaces.entries()) {
        for (const secret of secrets[i]!) {
          const expected = createHmac('sha256', secret).update(`v0:${timestamp}:`).update(raw).digest();
          if (timingSafeEqual(expected, mac)) matched.add(wid);
        }
      }
      if (matched.size === 0)
        throw signatureRefused('The Slack signature does not match the body with any signing secret set up here.');
      if (!(await claim(mac.toString('hex'))))
        throw signatureRefused(
          'This signed request was already received; each is accepted once.',
          'Send every request afresh, signed at the moment it is sent.',
        );
      const workspaceIds = [...matched];
      if (workspaceIds.length === 1)
        (request.plugins as { svcInbound?: { workspaceId?: string } }).svcInbound = { workspaceId: workspaceIds[0]! };
      return { workspaceIds };
    },
  };
}

/** The part of a `block_actions` interaction payload a click needs (other fields are ignored). */
export const blockActionsSchema = Joi.object({
  type: Joi.string().valid('block_actions').required(),
  user: Joi.object({
    id: Joi.string()
      .pattern(/^[A-Z0-9]{1,64}$/)
      .required(),
  })
    .unknown(true)
    .required(),
  team: Joi.object({ id: Joi.string().max(64).required() })
    .unknown(true)
    .allow(null),
  actions: Joi.array()
    .min(1)
    .items(
      Joi.object({
        action_id: Joi.string().valid('approve', 'deny').required(),
        value: Joi.string().max(200).required(),
      }).unknown(true),
    )
    .required(),
}).unknown(true);

export interface BlockActions {
  type: 'block_actions';
  user: { id: string };
  team?: { id: string } | null;
  actions: Array<{ action_id: 'approve' | 'deny'; value: string }>;
}

/** The JSON of a form body's `payload` field, or undefined when there is none or it is not JSON. */
export function formPayload(raw: Buffer): unknown {
  const payload = new URLSearchParams(raw.toString('utf8')).get('payload');
  if (payload === null) return undefined;
  try {
    return JSON.parse(payload);
  } catch {
    return undefined;
  }
}
