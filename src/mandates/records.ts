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
  /** The least amount one action may carry (an AP2 `payment.amount_range` `min`). */
  minAmount?: number;
  /** A total over the rule's whole life, never reset by a period (an AP2 `payment.budget`). */
  budget?: { amount: number };
  /**
   * How often the rule may be used (an AP2 `payment.agent_recurrence`): at most once per
   * `frequency` window (none for ON_DEMAND), at most `maxOccurrences` times in all.
   */
  recurrence?: { frequency: RecurrenceFrequency; maxOccurrences?: number };
  /** When actions may happen (an AP2 `payment.execution_date`), ISO 8601 instants, either end open. */
  executionDate?: { notBefore?: string; notAfter?: string };
  /** Where the rule came from, when svc did not write it from a person's edit: an imported credential. */
  source?: RuleSource;
}

export type RecurrenceFrequency = 'ON_DEMAND' | 'DAILY' | 'WEEKLY' | 'BIWEEKLY' | 'MONTHLY' | 'QUARTERLY' | 'ANNUALLY';

/**
 * An AP2 open Payment Mandate a rule was made from (src/ap2/): the credential's hash (base64url
 * SHA-256 of its issuer-signed JWT), its issuer, its `exp`, and whether only a presented closed
 * mandate chained to it can use the rule (its constraints name what only that closed mandate shows).
 */
export interface RuleSource {
  kind: 'ap2';
  mandateId: string;
  credentialHash: string;
  issuer: string;
  expiresAt?: string;
  presentationRequired?: boolean;
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
  /** The rule counts its uses (`recurrence`): the action adds one to the cover's use count. */
  occurrence?: boolean;
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
