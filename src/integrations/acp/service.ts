import { AppError } from '../../errors/app-error.js';
import type { Ledger } from '../../ledger/service.js';
import { SIGNATURE_TOLERANCE_SECONDS } from '../../lib/svc-signature.js';
import type { Store } from '../../store/index.js';
import type { Once } from '../once.js';
import { integrationsRepo } from '../repo.js';
import type { AcpEvent } from './schemas.js';
import type { AcpDelivery } from './verifier.js';

/**
 * A merchant's checkout events (ACP webhooks, docs/integrations.md#acp-merchant-webhooks), once
 * verifier.ts accepted the signature and the route the body.
 * Rules:
 * - Each signed delivery (its `t` and the SHA-256 of its bytes) is accepted once, claimed in the
 *   same write as its ledger record: a replay within the signature's window is 401 and records
 *   nothing; a failed write leaves it unclaimed, so the merchant's retry is taken.
 * - Each event is recorded as `acp.order_create` or `acp.order_update`, actor `acp`, subject the
 *   checkout session id, with the order's id, status, permalink, currency and total (the
 *   `totals` entry of type `total`), and the decisions it belongs to.
 * - A decision belongs to a checkout session when its request named it: `acp.checkoutSessionId`,
 *   or `metadata.checkoutSessionId` / `metadata.checkout_session_id`. At most MAX_MATCHED are
 *   listed, newest first.
 */
export interface AcpOrders {
  /** Claims the delivery and records the event, in one write; answers what was matched. */
  handle(
    delivery: AcpDelivery,
    event: AcpEvent,
  ): Promise<{ received: true; checkout_session_id: string; actions: string[] }>;
}

export const MAX_MATCHED = 20;
const ACTOR = 'acp';

/** The checkout session a decision's request named, if any. */
export function checkoutSessionOf(action: { metadata: Record<string, unknown> | null }): string | undefined {
  const acp = (action as { acp?: { checkoutSessionId?: unknown } }).acp;
  const named = acp?.checkoutSessionId ?? action.metadata?.checkoutSessionId ?? action.metadata?.checkout_session_id;
  return typeof named === 'string' ? named : undefined;
}

/** The order's total in minor units (its `totals` entry of type `total`), if it states one. */
function totalOf(event: AcpEvent): number | null {
  for (const entry of event.data.totals ?? []) {
    const e = entry as { type?: unknown; amount?: unknown } | null;
    if (e && e.type === 'total' && Number.isSafeInteger(e.amount)) return e.amount as number;
  }
  return null;
}

export function createAcpOrders(deps: { store: Store; ledger: Ledger; once: Once }): AcpOrders {
  const { store, ledger, once } = deps;
  const repo = integrationsRepo(store);
  return {
    async handle(delivery, event) {
      const { workspaceId: wid } = delivery;
      const session = event.data.checkout_session_id;
      return store.write(async () => {
        const until = (delivery.t + SIGNATURE_TOLERANCE_SECONDS + 1) * 1000;
        if (!(await once.claim(`acp:${wid}`, `${delivery.t}:${delivery.bodyHash}`, until))) {
          throw new AppError('unauthenticated', {
            message: 'This signed event was already received; each is accepted once.',
            fix: 'Sign every delivery afresh (a new t), as the checkout webhooks specification asks.',
          });
        }
        const actions = (await repo.actionsIn(wid))
          .filter((a) => checkoutSessionOf(a) === session)
          .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
          .slice(0, MAX_MATCHED)
          .map((a) => a.id);
        await ledger.record({
          workspaceId: wid,
          actor: ACTOR,
          kind: `acp.${event.type}`,
          subject: session,
          data: {
            checkoutSessionId: session,
            orderId: event.data.id ?? null,
            status: event.data.status,
            permalinkUrl: event.data.permalink_url,
            currency: event.data.currency?.toUpperCase() ?? null,
            total: totalOf(event),
            actions,
          },
        });
        return { received: true as const, checkout_session_id: session, actions };
      });
    },
  };
}
