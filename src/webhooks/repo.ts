import type { Store } from '../store/index.js';
import type { DeliveryRecord, WebhookEndpointRecord } from './records.js';

/** An outbox entry's key: [due ms, wid, endpoint id or target name, delivery id]. */
export type OutboxKey = [number, string, string, string];

/**
 * Outbound webhooks' tables: endpoints, deliveries, the outbox (deliveries in the order they are
 * due) and the events sent once (`webhookAdvised`). Writes only inside `store.write`.
 */
export function webhooksRepo(store: Store) {
  const t = store.tables;
  return {
    endpoint(wid: string, id: string): Promise<WebhookEndpointRecord | undefined> {
      return t.webhookEndpoints.get([wid, id]);
    },
    hasEndpoint(wid: string, id: string): Promise<boolean> {
      return t.webhookEndpoints.has([wid, id]);
    },
    putEndpoint(record: WebhookEndpointRecord): Promise<void> {
      return t.webhookEndpoints.put([record.workspaceId, record.id], record);
    },
    removeEndpoint(wid: string, id: string): Promise<void> {
      return t.webhookEndpoints.remove([wid, id]);
    },
    async endpoints(wid: string): Promise<WebhookEndpointRecord[]> {
      return (await t.webhookEndpoints.scan([wid])).map((e) => e.value);
    },

    delivery(wid: string, endpointId: string, id: string): Promise<DeliveryRecord | undefined> {
      return t.deliveries.get([wid, endpointId, id]);
    },
    putDelivery(record: DeliveryRecord): Promise<void> {
      return t.deliveries.put([record.workspaceId, record.endpointId, record.id], record);
    },
    async deliveries(wid: string, endpointId: string): Promise<DeliveryRecord[]> {
      return (await t.deliveries.scan([wid, endpointId])).map((e) => e.value);
    },

    /** The first `limit` outbox entries, earliest due first. */
    async outbox(limit: number): Promise<OutboxKey[]> {
      return (await t.outbox.scan([], { limit })).map((e) => e.key as OutboxKey);
    },
    inOutbox(key: OutboxKey): Promise<boolean> {
      return t.outbox.has(key);
    },
    putOutbox(key: OutboxKey): Promise<void> {
      return t.outbox.put(key, 1);
    },
    removeOutbox(key: OutboxKey): Promise<void> {
      return t.outbox.remove(key);
    },

    advised(wid: string, type: string, onceKey: string): Promise<boolean> {
      return t.webhookAdvised.has([wid, type, onceKey]);
    },
    putAdvised(wid: string, type: string, onceKey: string, eventId: string): Promise<void> {
      return t.webhookAdvised.put([wid, type, onceKey], eventId);
    },
  };
}

/** The outbound webhooks' reads and writes (one per store). */
export type WebhooksRepo = ReturnType<typeof webhooksRepo>;
