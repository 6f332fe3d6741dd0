import type { Migration } from './index.js';

/**
 * Schema 4: the gate's tables (mandates, templates, actions, idempotency, period usage,
 * approvals, signing keys, the ledger) start empty; agents gain `holds`. Re-running it sets
 * the same empty list on agents that have none and leaves other agents unchanged.
 */
export const m004Gate: Migration = {
  version: 4,
  description: 'the action gate: mandates, actions, receipts, ledger; agent holds',
  async apply(tx) {
    for (const { key, value } of await tx.agents.scan([])) {
      if (!Array.isArray(value.holds)) await tx.agents.put(key, { ...value, holds: [] });
    }
  },
};
