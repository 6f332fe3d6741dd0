/**
 * The Stripe event types svc acts on, listed once (service.ts lists the rules), and where their
 * answers are kept (hook-events.ts sources).
 */
export const SUBSCRIPTION_EVENTS: ReadonlySet<string> = new Set([
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
]);
export const BILLING_EVENTS: ReadonlySet<string> = new Set([...SUBSCRIPTION_EVENTS, 'invoice.payment_failed']);
export const ISSUING_EVENTS: ReadonlySet<string> = new Set([
  'issuing_authorization.request',
  'issuing_transaction.created',
]);
/** The ledger actor of what Stripe's events change, and where the answers to workspace-signed events are kept. */
export const ACTOR = 'stripe';
/** Where the answers to events signed with the operator's billing secret are kept (apart from the workspace's). */
export const BILLING_SOURCE = 'stripe-billing';
