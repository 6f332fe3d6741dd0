import type { IntegrationKind } from './kinds.js';

/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids: src/lib/ids.ts). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that). The kinds are
 * listed once, in kinds.ts.
 */
export type { IntegrationKind };

/**
 * An inbound integration's signing secrets (docs/integrations.md), sealed with the master key: the current
 * one, and during a rotation the one before it until `retiresAt`.
 */
export interface IntegrationRecord {
  kind: IntegrationKind;
  workspaceId: string;
  secrets: Array<{ sealed: string; createdAt: string; retiresAt: string | null }>;
  /** The kind's non-secret settings; absent in records older than them. */
  config?: Record<string, unknown>;
  /** The kind's secret settings (github's API `token`), each sealed like `secrets`; never answered. */
  sealedConfig?: Record<string, string>;
  updatedAt: string;
  updatedBy: string;
}

/** A deployment protection decision to report to GitHub (its deployment_callback_url), until sent or given up. */
export interface GithubCallbackRecord {
  id: string;
  workspaceId: string;
  /** The delivery decided (the ledger records' subject). */
  delivery: string;
  url: string;
  environment: string;
  state: 'approved' | 'rejected';
  comment: string;
  actionId: string | null;
  createdAt: string;
  nextAttemptMs: number;
  attempts: Array<{ at: string; status: number | null; error: string | null }>;
}

/** Who issued a card: the generic issuer or Stripe Issuing. Cards and charges are kept apart by it. */
export type CardProvider = 'issuer' | 'stripe';

/** A card of a provider mapped to an agent (null: unmapped). */
export interface CardRecord {
  provider: CardProvider;
  cardId: string;
  workspaceId: string;
  agentId: string | null;
  updatedAt: string;
  updatedBy: string;
}

/** A code-host (GitHub) account, usually a bot, mapped to the agent that acts through it (null: unmapped). */
export interface GithubBotRecord {
  /** The account's login as GitHub spells it (the key is its lower-case form: logins ignore case). */
  login: string;
  workspaceId: string;
  agentId: string | null;
  updatedAt: string;
  updatedBy: string;
}

/** A posted (or refunded) card charge as its provider reported it, and how it was reconciled. */
export interface ChargeRecord {
  provider: CardProvider;
  /** The provider's id of the charge's event (issuer) or transaction (Stripe `ipi_…`). */
  eventId: string;
  workspaceId: string;
  cardId: string;
  kind: 'posted' | 'refunded';
  amount: number;
  currency: string;
  merchant: { name: string; domain: string | null; mcc: string | null };
  createdAt: string;
  importedAt: string;
  /** The allowed action of the card's agent it matched; null: unmatched (flagged). */
  actionId: string | null;
  agentId: string | null;
}
