import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { Logger } from '../lib/log.js';
import type { AppendedRecord } from '../ledger/service.js';
import type { LedgerSubscriber } from '../ledger/subscribers.js';
import type { Store } from '../store/index.js';
import { createDispatcher } from './dispatch.js';
import { createEndpoints } from './endpoints.js';
import { EVENT_OF } from './events.js';
import type { DeliveryRecord, WebhookEndpointRecord } from './records.js';
import type { Sender } from './send.js';
import { webhooksRepo } from './repo.js';

export { EVENT_OF, EVENT_TYPES, OTHER_EVENTS } from './events.js';

/**
 * Outbound webhooks (issue 8, docs/integrations.md#outbound-webhooks): endpoints per workspace, events signed with
 * `svc-signature` over the exact bytes sent, delivered from a durable outbox.
 * Rules:
 * - An event is a ledger record of a kind customers subscribe to (EVENT_OF). Its deliveries are
 *   written in the same write as the record: if the record is stored, so are they, and a crash
 *   (even SIGKILL) loses none. The event id is the record's id, the same on every try.
 * - The dispatcher looks at the outbox every `dispatchIntervalMs` and sends what is due, one try
 *   per delivery at a time, with a timeout. A 2xx is delivered; anything else (a status, a
 *   timeout, a refused connection) waits backoffBaseMs × 2^(tries-1), capped at backoffMaxMs,
 *   with ±20% jitter, and tries again, until giveUpAfterMs after the event: then the delivery
 *   has failed, the endpoint is disabled, and that is recorded in the ledger (and is itself an
 *   event, `webhook.disabled`, for the workspace's other endpoints).
 * - Each try is claimed first, in one write that reads the outbox entry, checks it is still there
 *   and due (and its delivery pending, its endpoint live) and moves it `claimMs` ahead (the
 *   longest a try can take: its target check and its post, each within the timeout, and a
 *   margin): of several server instances, or passes of one, exactly one sends it. Sending and
 *   signing happen after that write, never inside one. A delivery that was being sent when the
 *   process died is sent again once its claim has lapsed (at least once; receivers deduplicate
 *   by `svc-event-id`).
 * - Finished deliveries (delivered, failed) stay in the log, and can be redelivered, for
 *   `retention.days` after their event; then the retention sweeper removes them
 *   (retention/policy.ts). A pending delivery is never swept.
 * - Targets: https, or http; an address resolving to link-local is always refused, loopback and
 *   private ones unless the operator allows them (`webhooks.allowPrivateTargets`). Checked when
 *   the endpoint is added and again at each try, and enforced at connect on the address actually
 *   connected to (lib/safe-target.ts), so a name rebound between the check and the connection is
 *   refused.
 * - The secret (`whs_…`) is shown once, when the endpoint is added; it is kept sealed.
 * - Named targets (`registerTarget`, e.g. the chat relay) share the outbox, the dispatcher, the
 *   retries and the target checks. Their address and secret are read at each try from their own
 *   settings; their stored body is rendered into the bytes sent by a deterministic function, so
 *   every try sends the same bytes and the store need not hold what only the sender may know.
 *   A named target given up on is recorded (`delivery.failed`); there is no endpoint to disable.
 */
/** A destination of the outbox besides customers' endpoints (see the rules above). */
export interface OutboxTarget {
  /** Where to send and the secret to sign with, read at each try; null when not set up (the try fails and is retried). */
  resolve(wid: string): Promise<{ url: string; secret: string } | null>;
  /** The bytes sent for a stored body: deterministic, so that every try sends the same bytes. */
  render?(wid: string, body: string): string;
}

export interface WebhookSettings {
  allowPrivateTargets: boolean;
  timeoutMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  giveUpAfterMs: number;
  dispatchIntervalMs: number;
}

/** An endpoint as answered: never its secret. */
export type WebhookEndpoint = Omit<WebhookEndpointRecord, 'secretSealed'>;

/** An event a named target is sent, as its owner queues it. */
export interface TargetEvent {
  eventId: string;
  eventType: string;
  body: string;
  createdAt: string;
}

/**
 * Outbound webhooks (the rules above). Reads and writes the `webhookEndpoints`, `webhookDeliveries`,
 * `webhookOutbox` and `webhookAdvised` tables; endpoint changes, redeliveries and give-ups write
 * ledger records in the same write.
 */
export interface Webhooks {
  /** Queues each ledger record's deliveries in the record's own write; the composition root subscribes it. */
  readonly outbox: LedgerSubscriber;
  /**
   * An event that is not a ledger record (`budget.advisory`), sent once per `onceKey`: a budget
   * crossing into nudge or downgrade in a period is one event, however many calls follow. The
   * caller does not wait for it; a failure to store it is logged and the call goes on.
   */
  advise(wid: string, type: 'budget.advisory', onceKey: string, data: Record<string, unknown>): void;
  /** Starts the dispatcher (the server does; commands that open the store do not). Finished deliveries are swept by the retention sweeper. */
  start(): void;
  /** Stops the dispatcher, after the pass under way. */
  stop(): Promise<void>;
  /** Sends what is due now (each delivery once at a time); resolves when those tries are written. */
  dispatch(): Promise<void>;
  /** Adds a named target (its name is not a `whk_` id); deliveries to it are queued with `enqueueInWrite`. */
  registerTarget(name: string, target: OutboxTarget): void;
  /** Inside a store write: queues one delivery to a named target, due now; it commits with the write. */
  enqueueInWrite(wid: string, target: string, event: TargetEvent): Promise<DeliveryRecord>;
  /** The deliveries of a named target in a workspace, newest first. */
  deliveriesOf(wid: string, target: string): Promise<DeliveryRecord[]>;
  /** Adds an endpoint after checking its target; its secret is answered this once. Recorded (`webhook.added`). */
  add(
    wid: string,
    input: { url: string; events: string[] },
    actor: string,
  ): Promise<WebhookEndpoint & { secret: string }>;
  /** The workspace's endpoints. */
  list(wid: string): Promise<WebhookEndpoint[]>;
  /** Removes an endpoint (not_found when it is not the workspace's). Recorded (`webhook.removed`). */
  remove(wid: string, id: string, actor: string): Promise<void>;
  /** An endpoint's deliveries, newest first (not_found when it is not the workspace's). */
  deliveries(wid: string, id: string): Promise<DeliveryRecord[]>;
  /** Sends a delivery again now (delivered or failed ones too); re-enables a disabled endpoint. Recorded (`webhook.redelivered`). */
  redeliver(wid: string, id: string, deliveryId: string, actor: string): Promise<DeliveryRecord>;
}

export interface WebhooksDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  masterKey: Buffer;
  ledger: Ledger;
  log: Logger;
  settings: WebhookSettings;
}

export function createWebhooks(deps: WebhooksDeps): Webhooks {
  const { store, clock, ids, settings } = deps;
  const repo = webhooksRepo(store);
  const targets = new Map<string, OutboxTarget>();

  // The sending half (send.ts: the target rule, undici, spans, metrics), loaded on first use: a
  // command that opens the store queues deliveries but never sends, and never loads it.
  let sending: Promise<Sender> | undefined;
  const sender = (): Promise<Sender> =>
    (sending ??= import('./send.js').then((m) =>
      m.createSender({ allowPrivateTargets: settings.allowPrivateTargets, timeoutMs: settings.timeoutMs }),
    ));
  // The shared target rule (lib/safe-target.ts): checked when added, and enforced at connect.
  const targetProblem = async (raw: string): Promise<string | null> => (await sender()).targetProblem(raw);

  /** Inside a write: one delivery of a body to one endpoint or named target, due now. */
  const queueInWrite = async (wid: string, endpointId: string, event: TargetEvent): Promise<DeliveryRecord> => {
    const due = clock.now();
    const delivery: DeliveryRecord = {
      id: ids.id('dlv'),
      workspaceId: wid,
      endpointId,
      eventId: event.eventId,
      eventType: event.eventType,
      body: event.body,
      createdAt: event.createdAt,
      status: 'pending',
      attempts: [],
      nextAttemptAt: isoAt(due),
    };
    await repo.putDelivery(delivery);
    await repo.putOutbox([due, wid, endpointId, delivery.id]);
    return delivery;
  };

  /** Inside a write: one event's deliveries to every endpoint of the workspace that takes its type. */
  const eventInWrite = async (
    wid: string,
    event: { id: string; type: string; at: string; data: Record<string, unknown> },
    skipEndpoint?: string,
  ): Promise<void> => {
    const endpoints = (await repo.endpoints(wid)).filter(
      (e) => e.disabledAt === null && e.events.includes(event.type) && e.id !== skipEndpoint,
    );
    if (endpoints.length === 0) return;
    const body = JSON.stringify({
      id: event.id,
      type: event.type,
      createdAt: event.at,
      workspaceId: wid,
      data: event.data,
    });
    for (const endpoint of endpoints)
      await queueInWrite(wid, endpoint.id, { eventId: event.id, eventType: event.type, body, createdAt: event.at });
  };

  /** The deliveries of one ledger record, written in its own write (a ledger subscriber). */
  const outbox: LedgerSubscriber = {
    async onRecordInWrite(record: AppendedRecord): Promise<void> {
      const type = EVENT_OF[record.kind];
      if (!type) return;
      await eventInWrite(
        record.workspaceId,
        {
          id: record.id,
          type,
          at: record.at,
          data: { kind: record.kind, subject: record.subject, actor: record.actor, ...record.data },
        },
        type === 'webhook.disabled' ? record.subject : undefined,
      );
    },
  };

  const dispatcher = createDispatcher({ ...deps, repo, targets, sender });

  return {
    outbox,

    advise(wid, type, onceKey, data) {
      void (async () => {
        // A read first: the usual case (already sent this period) writes nothing.
        if (await repo.advised(wid, type, onceKey)) return;
        await store.write(async () => {
          if (await repo.advised(wid, type, onceKey)) return;
          const at = isoAt(clock.now());
          const id = ids.id('evt');
          await repo.putAdvised(wid, type, onceKey, id);
          await eventInWrite(wid, { id, type, at, data });
        });
      })().catch((err: unknown) => deps.log.error({ err, type }, 'webhook event not stored'));
    },

    start: dispatcher.start,
    stop: dispatcher.stop,
    dispatch: dispatcher.dispatch,

    registerTarget(name, target) {
      if (name.startsWith('whk_') || targets.has(name)) throw new Error(`outbox target ${name} is taken`);
      targets.set(name, target);
    },

    async enqueueInWrite(wid, target, event) {
      if (!targets.has(target)) throw new Error(`no outbox target ${target}`);
      return queueInWrite(wid, target, event);
    },

    async deliveriesOf(wid, target) {
      return (await repo.deliveries(wid, target)).sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    },

    ...createEndpoints({ ...deps, repo, targetProblem }),
  };
}
