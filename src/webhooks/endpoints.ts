import { AppError } from '../errors/app-error.js';
import type { Ledger } from '../ledger/service.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { Store } from '../store/index.js';
import type { DeliveryRecord, WebhookEndpointRecord } from './records.js';
import type { WebhooksRepo } from './repo.js';
import { sealEndpointSecret } from './secret.js';
import type { WebhookEndpoint, Webhooks } from './service.js';

/**
 * Customers' endpoints (service.ts lists the rules): added with a target check and a secret shown
 * once, listed without it, removed, their deliveries shown, and one delivery sent again. Each
 * change is one write with its ledger record.
 */

export interface EndpointsDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  masterKey: Buffer;
  ledger: Ledger;
  repo: WebhooksRepo;
  /** Why `url` may not be sent to, or null (the target rule, loaded with the sending half). */
  targetProblem(url: string): Promise<string | null>;
}

export type Endpoints = Pick<Webhooks, 'add' | 'list' | 'remove' | 'deliveries' | 'redeliver'>;

/** An endpoint as answered: everything but its sealed secret. */
export function endpointView({ secretSealed: _sealed, ...rest }: WebhookEndpointRecord): WebhookEndpoint {
  return rest;
}

const notFound = (id: string) => new AppError('not_found', { message: `No webhook endpoint ${id} in this workspace.` });

export function createEndpoints(deps: EndpointsDeps): Endpoints {
  const { store, clock, ids, masterKey, ledger, repo } = deps;
  return {
    async add(wid, input, actor) {
      const problem = await deps.targetProblem(input.url);
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
        secretSealed: sealEndpointSecret(masterKey, wid, id, secret),
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
      return { ...endpointView(record), secret };
    },

    async list(wid) {
      return (await repo.endpoints(wid)).map(endpointView);
    },

    async remove(wid, id, actor) {
      await store.write(async () => {
        if (!(await repo.hasEndpoint(wid, id))) throw notFound(id);
        await repo.removeEndpoint(wid, id);
        await ledger.record({ workspaceId: wid, actor, kind: 'webhook.removed', subject: id, data: {} });
      });
    },

    async deliveries(wid, id) {
      if (!(await repo.hasEndpoint(wid, id))) throw notFound(id);
      return (await repo.deliveries(wid, id)).sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    },

    async redeliver(wid, id, deliveryId, actor) {
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
