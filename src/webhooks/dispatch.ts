import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Logger } from '../lib/log.js';
import { periodic, retryDelay } from '../lib/schedule.js';
import type { Store } from '../store/index.js';
import type { DeliveryRecord, WebhookEndpointRecord } from './records.js';
import type { OutboxKey, WebhooksRepo } from './repo.js';
import { unsealEndpointSecret } from './secret.js';
import type { Sender } from './send.js';
import type { OutboxTarget, WebhookSettings } from './service.js';

/**
 * The dispatcher of the outbox (service.ts lists the rules): each pass takes what is due, and each
 * try of a delivery runs these steps in order: claim it (one write), find where it goes and the
 * secret to sign with, check the target, post, then write the outcome (delivered, or the next try,
 * or given up: the endpoint disabled or the named target's failure recorded).
 */

/** Beyond a try's own bound (two timeouts: its target check and its post): a crashed try is sent again this soon after. */
const CLAIM_MARGIN_MS = 5_000;
const BATCH = 20;

export interface DispatcherDeps {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  log: Logger;
  masterKey: Buffer;
  settings: WebhookSettings;
  repo: WebhooksRepo;
  /** The named targets (service.ts `registerTarget`), by name. */
  targets: ReadonlyMap<string, OutboxTarget>;
  /** The network half, loaded on first use. */
  sender(): Promise<Sender>;
}

export interface Dispatcher {
  /** Sends what is due now (each delivery once at a time); resolves when those tries are written. */
  dispatch(): Promise<void>;
  /** Starts the periodic pass, every `dispatchIntervalMs`. */
  start(): void;
  /** Stops it, after the pass under way. */
  stop(): Promise<void>;
}

interface Claimed {
  lease: OutboxKey;
  delivery: DeliveryRecord;
  endpoint: WebhookEndpointRecord | undefined;
}

type Destination = { url: string; secret: string; body: string };

/** What a try came to: the receiver's status, or why nothing was sent or it failed. */
interface Outcome {
  status: number | null;
  error: string | null;
  ok: boolean;
  started: number;
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { clock, log, settings } = deps;
  const inFlight = new Set<string>();

  const dispatch = async (): Promise<void> => {
    const now = clock.now();
    const due = (await deps.repo.outbox(BATCH * 4)).filter((key) => Number(key[0]) <= now && !inFlight.has(key[3]));
    await Promise.all(
      due.slice(0, BATCH).map(async (key) => {
        if (inFlight.has(key[3])) return;
        inFlight.add(key[3]);
        try {
          await attempt(deps, key);
        } catch (err) {
          log.error({ err, deliveryId: key[3] }, 'webhook delivery failed to be recorded');
        } finally {
          inFlight.delete(key[3]);
        }
      }),
    );
  };

  const loop = periodic(dispatch, settings.dispatchIntervalMs, (err) => log.error({ err }, 'webhook dispatch failed'));
  return { dispatch, start: loop.start, stop: loop.stop };
}

/** One try of one delivery: claimed, sent, then its outcome written (and its next try scheduled). */
async function attempt(deps: DispatcherDeps, key: OutboxKey): Promise<void> {
  const claimed = await claim(deps, key);
  if (!claimed) return;
  const outcome = await send(deps, key, claimed);
  await recordOutcome(deps, key, claimed.lease, outcome);
}

/**
 * Claims one outbox entry for one try: what to send and the claim's own outbox key, or null when
 * it is gone, not due, claimed by another pass, or has nothing left to send (then the entry is dropped).
 */
function claim(deps: DispatcherDeps, key: OutboxKey): Promise<Claimed | null> {
  const { store, clock, repo, settings, targets } = deps;
  /** How long a claimed try keeps every other pass off its delivery. */
  const claimMs = 2 * settings.timeoutMs + CLAIM_MARGIN_MS;
  return store.write(async () => {
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
}

/** Where a claimed delivery goes and what it signs with: a named target's settings read now, or the endpoint's own. */
async function destinationOf(
  deps: DispatcherDeps,
  key: OutboxKey,
  { delivery, endpoint }: Claimed,
): Promise<{ destination: Destination | null; error: string | null }> {
  const [, wid, endpointId] = key;
  const named = deps.targets.get(endpointId);
  if (!named) {
    const secret = unsealEndpointSecret(deps.masterKey, wid, endpointId, endpoint!.secretSealed);
    return { destination: { url: endpoint!.url, secret, body: delivery.body }, error: null };
  }
  try {
    const resolved = await named.resolve(wid);
    if (!resolved) return { destination: null, error: 'refused: the target is not set up' };
    const body = named.render ? named.render(wid, delivery.body) : delivery.body;
    return { destination: { ...resolved, body }, error: null };
  } catch {
    return { destination: null, error: 'refused: the delivery could not be prepared' };
  }
}

/** The try itself: the target checked again (it may have been rebound since), then one signed POST; counted. */
async function send(deps: DispatcherDeps, key: OutboxKey, claimed: Claimed): Promise<Outcome> {
  const { clock } = deps;
  const started = clock.now();
  const found = await destinationOf(deps, key, claimed);
  const { destination } = found;
  let { error } = found;
  let status: number | null = null;
  const sender = await deps.sender();
  const problem = destination
    ? await sender.targetProblem(destination.url).catch(() => 'its address could not be checked')
    : null;
  if (problem) {
    error = `refused: ${problem}`;
  } else if (destination) {
    ({ status, error } = await sender.post(claimed.delivery, destination, () => Math.floor(clock.now() / 1000)));
  }
  const ok = status !== null && status >= 200 && status < 300;
  sender.count(ok ? 'delivered' : problem || !destination ? 'refused' : 'failed');
  return { status, error, ok, started };
}

/** Writes a try's outcome: delivered, or the next try scheduled, or given up after `giveUpAfterMs`. */
async function recordOutcome(deps: DispatcherDeps, key: OutboxKey, lease: OutboxKey, outcome: Outcome) {
  const { store, clock, repo, settings } = deps;
  const [, wid, endpointId, deliveryId] = key;
  const { status, error, ok, started } = outcome;
  const now = clock.now();
  await store.write(async () => {
    const current = await repo.delivery(wid, endpointId, deliveryId);
    await repo.removeOutbox(lease);
    if (!current || current.status !== 'pending') return;
    const attempts = [...current.attempts, { at: isoAt(started), status, error, ms: now - started }];
    if (ok) {
      await repo.putDelivery({ ...current, attempts, status: 'delivered', nextAttemptAt: null });
      return;
    }
    const next = now + retryDelay(attempts.length, settings);
    if (next - Date.parse(current.createdAt) > settings.giveUpAfterMs) {
      await repo.putDelivery({ ...current, attempts, status: 'failed', nextAttemptAt: null });
      await giveUpInWrite(deps, key, current, attempts.length, now);
      return;
    }
    await repo.putDelivery({ ...current, attempts, nextAttemptAt: isoAt(next) });
    await repo.putOutbox([next, wid, endpointId, deliveryId]);
  });
}

/**
 * Inside the outcome's write, a delivery given up on: a named target's failure is recorded
 * (`delivery.failed`; there is no endpoint to disable); an endpoint is disabled, and that is
 * recorded (`webhook.disabled`, itself an event for the workspace's other endpoints).
 */
async function giveUpInWrite(
  deps: DispatcherDeps,
  [, wid, endpointId, deliveryId]: OutboxKey,
  current: DeliveryRecord,
  tries: number,
  now: number,
): Promise<void> {
  const { ledger, repo } = deps;
  if (deps.targets.has(endpointId)) {
    await ledger.record({
      workspaceId: wid,
      actor: 'system',
      kind: 'delivery.failed',
      subject: deliveryId,
      data: { target: endpointId, eventId: current.eventId, eventType: current.eventType, tries },
    });
    return;
  }
  const ep = await repo.endpoint(wid, endpointId);
  if (!ep || ep.disabledAt) return;
  await repo.putEndpoint({ ...ep, disabledAt: isoAt(now) });
  await ledger.record({
    workspaceId: wid,
    actor: 'system',
    kind: 'webhook.disabled',
    subject: endpointId,
    data: { url: ep.url, deliveryId, eventId: current.eventId, tries },
  });
}
