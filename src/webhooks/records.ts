/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/**
 * An outbound webhook endpoint (docs/integrations.md#outbound-webhooks); its signing secret sealed
 * with the master key.
 */
export interface WebhookEndpointRecord {
  id: string;
  workspaceId: string;
  url: string;
  events: string[];
  secretSealed: string;
  createdAt: string;
  createdBy: string;
  /** Set when a delivery kept failing past the give-up time; nothing more is sent. */
  disabledAt: string | null;
}

/** One event for one endpoint, in the outbox until delivered or given up. */
export interface DeliveryRecord {
  id: string;
  workspaceId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  /** The exact bytes sent on every try (the signature covers them). */
  body: string;
  createdAt: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: Array<{ at: string; status: number | null; error: string | null; ms: number }>;
  nextAttemptAt: string | null;
}
