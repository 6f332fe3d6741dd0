import { AppError } from '../errors/app-error.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { Logger } from '../lib/log.js';
import { sealText, unsealText } from '../lib/seal.js';
import { periodic, retryDelay } from '../lib/schedule.js';
import type { LedgerRecord } from '../ledger/service.js';
import type { LedgerSubscriber } from '../ledger/subscribers.js';
import type { Store } from '../store/index.js';
import type { DeliveryRecord, WebhookEndpointRecord } from './records.js';
import type { Sender } from './send.js';
import { webhooksRepo, type OutboxKey } from './repo.js';

/** Beyond a try's own bound (two timeouts: its target check and its post): a crashed try is sent again this soon after. */
const CLAIM_MARGIN_MS = 5_000;

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
export const EVENT_OF: Record<string, string> = {
  'action.allowed': 'action.decided',
  'action.denied': 'action.decided',
  'action.pending_approval': 'approval.requested',
  'approval.approved': 'approval.decided',
  'approval.denied': 'approval.decided',
  'approval.expired': 'approval.decided',
  'agent.stopped': 'agent.stopped',
  'fleet.frozen': 'agent.stopped',
  'workspace.stop_all': 'agent.stopped',
  'agent.restarted': 'agent.restarted',
  'workspace.stop_all_lifted': 'agent.restarted',
  'card.charge_unmatched': 'card.charge_unmatched',
  'webhook.disabled': 'webhook.disabled',
  'mcp.tool_changed': 'mcp.tool_changed',
};
/** Events that are not ledger records (see `advise`). */
export const OTHER_EVENTS = ['budget.advisory'];
export const EVENT_TYPES = [...new Set([...Object.values(EVENT_OF), ...OTHER_EVENTS])].sort();
const SEAL_PURPOSE = 'webhook-secret';
const BATCH = 20;

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

export function createWebhooks(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  masterKey: Buffer;
  ledger: Ledger;
  log: Logger;
  settings: WebhookSettings;
}) {
  const { store, clock, ids, masterKey, ledger, settings } = deps;
  const repo = webhooksRepo(store);
  const targets = new Map<string, OutboxTarget>();
  /** How long a claimed try keeps every other pass off its delivery (see the rules above). */
  const claimMs = 2 * settings.timeoutMs + CLAIM_MARGIN_MS;

  // The sending half (send.ts: the target rule, undici, spans, metrics), loaded on first use: a
  // command that opens the store queues deliveries but never sends, and never loads it.
  let sending: Promise<Sender> | undefined;
  const sender = (): Promise<Sender> =>
    (sending ??= import('./send.js').then((m) =>
      m.createSender({ allowPrivateTargets: settings.allowPrivateTargets, timeoutMs: settings.timeoutMs }),
    ));
  // The shared target rule (lib/safe-target.ts): checked when added, and enforced at connect.
  const targetProblem = async (raw: string): Promise<string | null> => (await sender()).targetProblem(raw);

  /** Inside a write: one event's deliveries to every endpoint of the workspace that takes its type. */
  const enqueueInWrite = async (
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
    const due = clock.now();
    for (const endpoint of endpoints) {
      const delivery: DeliveryRecord = {
        id: ids.id('dlv'),
        workspaceId: wid,
        endpointId: endpoint.id,
        eventId: event.id,
        eventType: event.type,
        body,
        createdAt: event.at,
        status: 'pending',
        attempts: [],
        nextAttemptAt: isoAt(due),
      };
      await repo.putDelivery(delivery);
      await repo.putOutbox([due, wid, endpoint.id, delivery.id]);
    }
  };

  /** The deliveries of one ledger record, written in its own write (a ledger subscriber). */
  const outbox: LedgerSubscriber = {
    async onRecordInWrite(record: LedgerRecord): Promise<void> {
      const type = EVENT_OF[record.kind];
      if (!type) return;
      await enqueueInWrite(
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

  /**
   * Claims one outbox entry for one try (see the rules above): what to send and the claim's own
   * outbox key, or null when it is gone, not due, claimed by another pass, or has nothing left to
   * send (then the entry is dropped).
   */
  const claim = (key: OutboxKey) =>
    store.write(async () => {
      const now = clock.now();
      if (key[0] > now || !(await repo.inOutbox(key))) return null;
      const [, wid, endpointId, deliveryId] = key;
      const named = targets.get(endpointId);
      const [delivery, endpoint] = await Promise.all([
        repo.delivery(wid, endpointId, deliveryId),
        named ? Promise.resolve(undefined) : repo.endpoint(wid, endpointId),
      ]);
      await repo.removeOutbox(key);
      if (!delivery || delivery.status !== 'pending' || (!named && (!endpoint || endpoint.disabledAt))) return null;
      const lease: OutboxKey = [now + claimMs, wid, endpointId, deliveryId];
      await repo.putOutbox(lease);
      return { lease, delivery, endpoint };
    });

  /** One try of one delivery: claimed, sent, then its outcome written (and its next try scheduled). */
  const attempt = async (key: OutboxKey): Promise<void> => {
    const [, wid, endpointId, deliveryId] = key;
    const claimed = await claim(key);
    if (!claimed) return;
    const { lease, delivery, endpoint } = claimed;
    const named = targets.get(endpointId);
    const started = clock.now();
    let status: number | null = null;
    let error: string | null = null;
    let destination: { url: string; secret: string; body: string } | null = null;
    if (named) {
      try {
        const resolved = await named.resolve(wid);
        if (resolved)
          destination = { ...resolved, body: named.render ? named.render(wid, delivery.body) : delivery.body };
        else error = 'refused: the target is not set up';
      } catch {
        error = 'refused: the delivery could not be prepared';
      }
    } else {
      destination = {
        url: endpoint!.url,
        secret: unsealText(masterKey, SEAL_PURPOSE, `${wid}/${endpointId}`, endpoint!.secretSealed),
        body: delivery.body,
      };
    }
    const problem = destination
      ? await targetProblem(destination.url).catch(() => 'its address could not be checked')
      : null;
    if (problem) {
      error = `refused: ${problem}`;
    } else if (destination) {
      ({ status, error } = await (await sender()).post(delivery, destination, () => Math.floor(clock.now() / 1000)));
    }
    const ok = status !== null && status >= 200 && status < 300;
    (await sender()).count(ok ? 'delivered' : problem || !destination ? 'refused' : 'failed');
    const now = clock.now();
    await store.write(async () => {
      const current = await repo.delivery(wid, endpointId, deliveryId);
      await repo.removeOutbox(lease);
      if (!current || current.status !== 'pending') return;
      const attempts = [...current.attempts, { at: isoAt(started), status, error, ms: now - started }];
      if (ok) {
        await repo.putDelivery({
          ...current,
          attempts,
          status: 'delivered',
          nextAttemptAt: null,
        });
        return;
      }
      const next = now + retryDelay(attempts.length, settings);
      if (next - Date.parse(current.createdAt) > settings.giveUpAfterMs) {
        await repo.putDelivery({
          ...current,
          attempts,
          status: 'failed',
          nextAttemptAt: null,
        });
        if (named) {
          await ledger.record({
            workspaceId: wid,
            actor: 'system',
            kind: 'delivery.failed',
            subject: deliveryId,
            data: {
              target: endpointId,
              eventId: current.eventId,
              eventType: current.eventType,
              tries: attempts.length,
            },
          });
          return;
        }
        const ep = await repo.endpoint(wid, endpointId);
        if (ep && !ep.disabledAt) {
          await repo.putEndpoint({ ...ep, disabledAt: isoAt(now) });
          await ledger.record({
            workspaceId: wid,
            actor: 'system',
            kind: 'webhook.disabled',
            subject: endpointId,
            data: { url: ep.url, deliveryId, eventId: current.eventId, tries: attempts.length },
          });
        }
        return;
      }
      await repo.putDelivery({ ...current, attempts, nextAttemptAt: isoAt(next) });
      await repo.putOutbox([next, wid, endpointId, deliveryId]);
    });
  };

  const inFlight = new Set<string>();

  /** Sends what is due now (each delivery once at a time); returns when those tries are written. */
  const dispatch = async (): Promise<void> => {
    const now = clock.now();
    const due = (await repo.outbox(BATCH * 4)).filter((key) => Number(key[0]) <= now && !inFlight.has(key[3]));
    await Promise.all(
      due.slice(0, BATCH).map(async (key) => {
        if (inFlight.has(key[3])) return;
        inFlight.add(key[3]);
        try {
          await attempt(key);
        } catch (err) {
          deps.log.error({ err, deliveryId: key[3] }, 'webhook delivery failed to be recorded');
        } finally {
          inFlight.delete(key[3]);
        }
      }),
    );
  };

  const loop = periodic(dispatch, settings.dispatchIntervalMs, (err) =>
    deps.log.error({ err }, 'webhook dispatch failed'),
  );

  return {
    /** Queues each ledger record's deliveries in the record's own write; the composition root subscribes it. */
    outbox,

    /** Starts the dispatcher (the server does; commands that open the store do not). */
    /**
     * An event that is not a ledger record (`budget.advisory`), sent once per `onceKey`: a budget
     * crossing into nudge or downgrade in a period is one event, however many calls follow. The
     * caller does not wait for it; a failure to store it is logged and the call goes on.
     */
    advise(wid: string, type: 'budget.advisory', onceKey: string, data: Record<string, unknown>): void {
      void (async () => {
        // A read first: the usual case (already sent this period) writes nothing.
        if (await repo.advised(wid, type, onceKey)) return;
        await store.write(async () => {
          if (await repo.advised(wid, type, onceKey)) return;
          const at = isoAt(clock.now());
          const id = ids.id('evt');
          await repo.putAdvised(wid, type, onceKey, id);
          await enqueueInWrite(wid, { id, type, at, data });
        });
      })().catch((err: unknown) => deps.log.error({ err, type }, 'webhook event not stored'));
    },

    /** Starts the dispatcher (the server does; commands that open the store do not). Finished deliveries are swept by the retention sweeper. */
    start: loop.start,
    stop: loop.stop,
    dispatch,

    /** Adds a named target (its name is not a `whk_` id); deliveries to it are queued with `enqueueInWrite`. */
    registerTarget(name: string, target: OutboxTarget): void {
      if (name.startsWith('whk_') || targets.has(name)) throw new Error(`outbox target ${name} is taken`);
      targets.set(name, target);
    },

    /** Inside a store write: queues one delivery to a named target, due now; it commits with the write. */
    async enqueueInWrite(
      wid: string,
      target: string,
      event: { eventId: string; eventType: string; body: string; createdAt: string },
    ): Promise<DeliveryRecord> {
      if (!targets.has(target)) throw new Error(`no outbox target ${target}`);
      const due = clock.now();
      const delivery: DeliveryRecord = {
        id: ids.id('dlv'),
        workspaceId: wid,
        endpointId: target,
        eventId: event.eventId,
        eventType: event.eventType,
        body: event.body,
        createdAt: event.createdAt,
        status: 'pending',
        attempts: [],
        nextAttemptAt: isoAt(due),
      };
      await repo.putDelivery(delivery);
      await repo.putOutbox([due, wid, target, delivery.id]);
      return delivery;
    },

    /** The deliveries of a named target in a workspace, newest first. */
    async deliveriesOf(wid: string, target: string): Promise<DeliveryRecord[]> {
      return (await repo.deliveries(wid, target)).sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    },

    async add(
      wid: string,
      input: { url: string; events: string[] },
      actor: string,
    ): Promise<ReturnType<typeof view> & { secret: string }> {
      const problem = await targetProblem(input.url);
      if (problem)
        throw new AppError('invalid_request', {
          message: `Webhooks cannot be sent to ${input.url}: ${problem}.`,
          details: { errors: [{ field: 'url', message: problem }] },
        });
      const id = ids.id('whk');
      const secret = ids.secret('whs');
      const record: WebhookEndpointRecord = {
        id,
        workspaceId: wid,
        url: input.url,
        events: [...new Set(input.events)].sort(),
        secretSealed: sealText(masterKey, SEAL_PURPOSE, `${wid}/${id}`, secret),
        createdAt: isoAt(clock.now()),
        createdBy: actor,
        disabledAt: null,
      };
      await store.write(async () => {
        await repo.putEndpoint(record);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: 'webhook.added',
          subject: id,
          data: { url: input.url, events: record.events },
        });
      });
      return { ...view(record), secret };
    },

    async list(wid: string) {
      return (await repo.endpoints(wid)).map(view);
    },

    async remove(wid: string, id: string, actor: string): Promise<void> {
      await store.write(async () => {
        if (!(await repo.hasEndpoint(wid, id)))
          throw new AppError('not_found', { message: `No webhook endpoint ${id} in this workspace.` });
        await repo.removeEndpoint(wid, id);
        await ledger.record({ workspaceId: wid, actor, kind: 'webhook.removed', subject: id, data: {} });
      });
    },

    async deliveries(wid: string, id: string): Promise<DeliveryRecord[]> {
      if (!(await repo.hasEndpoint(wid, id)))
        throw new AppError('not_found', { message: `No webhook endpoint ${id} in this workspace.` });
      return (await repo.deliveries(wid, id)).sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    },

    /** Sends a delivery again now (delivered or failed ones too); re-enables a disabled endpoint. */
    async redeliver(wid: string, id: string, deliveryId: string, actor: string): Promise<DeliveryRecord> {
      return store.write(async () => {
        const [endpoint, delivery] = await Promise.all([repo.endpoint(wid, id), repo.delivery(wid, id, deliveryId)]);
        if (!endpoint || !delivery)
          throw new AppError('not_found', {
            message: `No delivery ${deliveryId} of endpoint ${id} in this workspace.`,
          });
        const now = clock.now();
        if (endpoint.disabledAt) await repo.putEndpoint({ ...endpoint, disabledAt: null });
        const again: DeliveryRecord = {
          ...delivery,
          status: 'pending',
          nextAttemptAt: isoAt(now),
          createdAt: isoAt(now),
        };
        await repo.putDelivery(again);
        await repo.putOutbox([now, wid, id, deliveryId]);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: 'webhook.redelivered',
          subject: deliveryId,
          data: { endpointId: id, eventId: delivery.eventId },
        });
        return again;
      });
    },
  };
}

function view({ secretSealed: _sealed, ...rest }: WebhookEndpointRecord) {
  return rest;
}

export type Webhooks = ReturnType<typeof createWebhooks>;
