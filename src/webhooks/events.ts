/**
 * The events customers subscribe to (docs/integrations.md#outbound-webhooks), listed once: each
 * ledger record kind that is an event, by the event type it is sent as, and the events that are
 * not ledger records. The route's list of event types and the console's choice derive from these.
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
/** Events that are not ledger records (see the service's `advise`). */
export const OTHER_EVENTS = ['budget.advisory'];
export const EVENT_TYPES = [...new Set([...Object.values(EVENT_OF), ...OTHER_EVENTS])].sort();
