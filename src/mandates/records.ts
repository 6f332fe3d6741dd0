/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/** A mandate rule (its fields are checked by schemas.ts; docs/gate.md#the-gate). */
export interface MandateRule {
  id: string;
  actions: string[];
  merchants?: string[];
  domains?: string[];
  currencies?: string[];
  maxAmount?: number;
  periodLimit?: { amount: number; period: 'day' | 'week' | 'month' };
  approval?: { above: number; approvers?: string[]; count?: 1 | 2; separationOfDuties?: boolean };
}

/**
 * What an allowed action adds to its rule's usage (usage.ts), so a settlement can release or
 * replace it. The gate's action record carries one.
 */
export interface PeriodCharge {
  /** The rule's cover, hashed: usage follows what a rule covers, not its id. */
  usageKey: string;
  currency: string;
  /** The UTC day the amount counts on. */
  day: string;
  amount: number;
}

export interface MandateRecord {
  workspaceId: string;
  agentId: string;
  rules: MandateRule[];
  updatedAt: string;
  updatedBy: string;
}

export interface TemplateRecord {
  id: string;
  workspaceId: string;
  name: string;
  rules: MandateRule[];
  createdAt: string;
}
