/**
 * The shapes of the records this domain writes to the store, as stored (src/store/tables.ts lists
 * their tables and key layouts; ids are the prefixed ids the API hands out, e.g. `call_…`). Types only: the store imports
 * them, so nothing here runs (test/architecture/layers.test.ts holds it to that).
 */

/** One model call through the gateway (issue 6), written off the hot path. */
export interface CallRecord {
  id: string;
  workspaceId: string;
  at: string;
  keyId: string;
  principal: string | null;
  team: string | null;
  agentId: string | null;
  taskId: string;
  taskClass: string;
  sessionId: string;
  shape: 'openai' | 'anthropic' | 'responses' | 'embeddings' | 'count_tokens';
  stream: boolean;
  dryRun: boolean;
  enforcement: string;
  requestedModel: string | null;
  /** The catalogue model that served it (null: none did). */
  model: string | null;
  provider: string | null;
  /** The upstream model of the deployment that answered (absent in records from before deployments). */
  upstreamModel?: string | null;
  attemptedModels: string[];
  /** Every prompt token, those the vendor's prompt cache read or wrote included. */
  inputTokens: number;
  /** Every answer token, reasoning included. */
  outputTokens: number;
  /** Of inputTokens, those read from the vendor's prompt cache (absent in older records: none known). */
  cacheReadTokens?: number;
  /** Of inputTokens, those written to the vendor's prompt cache (absent in older records: none known). */
  cacheWriteTokens?: number;
  /** Of cacheWriteTokens, those kept one hour (absent: none). */
  cacheWrite1hTokens?: number;
  /** Of outputTokens, those the model spent reasoning (absent in older records: none known). */
  reasoningTokens?: number;
  costMicros: number;
  latencyMs: number;
  overheadMicros: number;
  outcome: 'ok' | 'dry_run' | 'upstream_failure' | 'upstream_error' | 'cut' | 'cancelled' | 'sensitive_data_blocked';
  /** What data-loss screening found in the answer's text, by kind (redacted or blocked); absent: nothing. */
  answerFindings?: Partial<Record<string, number>>;
  /** Whether the response cache answered (hit, at zero cost) or missed; absent when it did not apply. */
  cache?: 'hit' | 'miss';
  budgetId: string | null;
}

/** A workspace's own gateway settings, over the deployment's (absent fields: the deployment's). */
export interface WorkspaceGatewayRecord {
  enforcement?: 'enforce' | 'shadow';
  dataLoss?: 'off' | 'redact' | 'block';
  updatedAt: string;
  updatedBy: string;
}

/** A model budget (POST /v1/admin/budgets). */
export interface BudgetRecord {
  id: string;
  workspaceId: string;
  scope: { kind: 'workspace' | 'team' | 'principal' | 'key' | 'agent'; id: string };
  amountMicros: number;
  period: 'day' | 'week' | 'month';
  ladder: Array<{ at: number; step: 'nudge' | 'downgrade' | 'approval' | 'block' }>;
  createdAt: string;
  createdBy: string;
}

/** What one scope used in one minute (gateway/limits.ts). */
export interface RateWindowRecord {
  requests: number;
  tokens: number;
  /** Bumped by every write: a writer knows when the store shows its own write. */
  version: number;
}

/** A model answer kept for replay (gateway/cache.ts). */
export interface CachedAnswerRecord {
  expiresAtMs: number;
  model: string;
  provider: string;
  /** The vendor's JSON answer, or the SSE bytes (UTF-8) of a streamed one. */
  json: Record<string, unknown> | null;
  sse: string | null;
  inputTokens: number;
  outputTokens: number;
  storedAt: string;
}

/**
 * What an admitted model request may still cost one budget, until its call settles (gateway/budgets.ts);
 * past `expiresAtMs` (a crashed process's) it no longer counts.
 */
export interface BudgetReservationRecord {
  micros: number;
  expiresAtMs: number;
}
