import { metrics } from '../lib/metrics.js';
import { postOnce } from '../lib/outbound.js';
import { safeDispatcher, targetProblem } from '../lib/safe-target.js';
import { inSpan, ROOT_CONTEXT, SpanKind, traceparentOf } from '../lib/tracing.js';
import { signPayload } from '../lib/svc-signature.js';

/**
 * The network half of outbound webhooks (service.ts has the outbox, the claims and the outcomes):
 * the target rule, one signed POST in its own root span, and the attempts metric. It brings undici,
 * the OpenTelemetry API and prom-client, so the service imports it on first use: a command that
 * opens the store queues deliveries in its ledger writes but never sends one, and never loads it.
 */
export interface Sender {
  /** Why `url` may not be sent to (the shared target rule), or null. */
  targetProblem(url: string): Promise<string | null>;
  /**
   * One try: `body` signed with `secret` at `nowSeconds`, posted within the timeout and enforced
   * at connect on the address actually connected to. A root span per try (deliveries run in the
   * background, apart from any request); the receiver gets its traceparent. Never throws: a
   * refused connection or a timeout is `{ status: null, error }`.
   */
  post(
    delivery: { eventId: string; eventType: string },
    destination: { url: string; secret: string; body: string },
    nowSeconds: () => number,
  ): Promise<{ status: number | null; error: string | null }>;
  /** Counts a try's outcome (the attempts metric). */
  count(result: 'delivered' | 'refused' | 'failed'): void;
}

export function createSender(settings: { allowPrivateTargets: boolean; timeoutMs: number }): Sender {
  // The shared target rule (lib/safe-target.ts): checked when added, and enforced at connect.
  const dispatcher = safeDispatcher({
    allowPrivateTargets: settings.allowPrivateTargets,
    connectTimeoutMs: settings.timeoutMs,
  });
  return {
    /** Why `url` may not be sent to, or null. */
    targetProblem: (url: string): Promise<string | null> =>
      targetProblem(url, { allowPrivateTargets: settings.allowPrivateTargets }),

    /**
     * One try: `body` signed with `secret` at `nowSeconds`. A root span per try (deliveries run in
     * the background, apart from any request); the receiver gets its traceparent.
     */
    post: (
      delivery: { eventId: string; eventType: string },
      destination: { url: string; secret: string; body: string },
      nowSeconds: () => number,
    ): Promise<{ status: number | null; error: string | null }> => {
      const { url, secret, body } = destination;
      return inSpan(
        `webhook ${delivery.eventType}`,
        {
          kind: SpanKind.CLIENT,
          attributes: { 'svc.webhook.event_type': delivery.eventType, 'server.address': hostOf(url) },
          parent: ROOT_CONTEXT,
        },
        async (span) => {
          const traceparent = traceparentOf(span);
          const sent = await postOnce(url, {
            body,
            dispatcher,
            timeoutMs: settings.timeoutMs,
            headers: {
              'content-type': 'application/json',
              'user-agent': 'svc-webhooks/1',
              'svc-event-id': delivery.eventId,
              'svc-event-type': delivery.eventType,
              'svc-signature': signPayload(secret, body, nowSeconds()),
              ...(traceparent ? { traceparent } : {}),
            },
          });
          if (sent.status !== null) span.setAttribute('http.response.status_code', sent.status);
          return sent;
        },
      );
    },

    /** Counts a try's outcome. */
    count: (result: 'delivered' | 'refused' | 'failed'): void => {
      metrics.webhookAttempts.inc({ result });
    },
  };
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}
