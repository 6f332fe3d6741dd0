import { Counter, Histogram, Registry } from 'prom-client';

/**
 * The product's event metrics (Prometheus, through prom-client), recorded where the events happen
 * and exposed by GET /metrics (observability/metrics.ts adds the gauges read at scrape time).
 *
 * Rules:
 * - Label values come from closed sets the product defines (decisions, outcomes, step names, data
 *   kinds) or from the operator's own configuration (gateway model and provider ids, route
 *   templates). Never an id of an agent, key, workspace, person or request: the series count
 *   stays bounded whatever the traffic.
 * - A value from outside a closed set is folded into `other` by `bounded`.
 * - One registry per process (this module), apart from prom-client's global one, so that nothing
 *   else loaded in the process adds series to the scrape.
 */
export const eventRegistry = new Registry();

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** `value` when it is a short snake-case word, else `other`: keeps a label's set of values closed. */
export function bounded(value: string | null | undefined, fallback = 'none'): string {
  if (value === null || value === undefined || value === '') return fallback;
  return /^[a-z0-9][a-z0-9_./:-]{0,79}$/i.test(value) ? value : 'other';
}

export const metrics = {
  decisions: new Counter({
    name: 'svc_gate_decisions_total',
    help: 'Gate decisions by decision and signal (a decision without a signal counts under signal="none").',
    labelNames: ['decision', 'signal'] as const,
    registers: [eventRegistry],
  }),
  requestsShed: new Counter({
    name: 'svc_http_requests_shed_total',
    help: 'Requests refused with 503 overloaded because the process was over a load limit (load settings).',
    registers: [eventRegistry],
  }),
  httpDuration: new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'Time from arrival to the answer, by route template, method and status class.',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: SECONDS,
    registers: [eventRegistry],
  }),
  authorizeDuration: new Histogram({
    name: 'svc_authorize_duration_seconds',
    help: 'POST /v1/authorize: time from arrival to the answer.',
    labelNames: ['status'] as const,
    buckets: SECONDS,
    registers: [eventRegistry],
  }),
  verifyDuration: new Histogram({
    name: 'svc_verify_duration_seconds',
    help: 'Receipt verification requests: time from arrival to the answer.',
    labelNames: ['status'] as const,
    buckets: SECONDS,
    registers: [eventRegistry],
  }),
  gatewayDuration: new Histogram({
    name: 'svc_gateway_request_duration_seconds',
    help: 'Model gateway requests (/v1/chat/completions, /v1/messages, ...): time from arrival to the answer.',
    labelNames: ['route', 'status'] as const,
    buckets: SECONDS,
    registers: [eventRegistry],
  }),
  storeFlush: new Histogram({
    name: 'svc_store_write_duration_seconds',
    help: 'Store writes: time until the transaction is committed and flushed to disk.',
    labelNames: ['outcome'] as const,
    buckets: SECONDS,
    registers: [eventRegistry],
  }),
  storeRoundTrips: new Counter({
    name: 'svc_store_round_trips_total',
    help: 'PostgreSQL store: messages a write transaction sent to the database and waited for (each holds one or more statements).',
    registers: [eventRegistry],
  }),
  storeStatements: new Counter({
    name: 'svc_store_statements_total',
    help: 'PostgreSQL store: statements in those messages (BEGIN and COMMIT included).',
    registers: [eventRegistry],
  }),
  storeRetries: new Counter({
    name: 'svc_store_write_retries_total',
    help: 'PostgreSQL store: write transactions run again after a serialization failure (40001) or deadlock (40P01), by code.',
    labelNames: ['code'] as const,
    registers: [eventRegistry],
  }),
  ledgerIntegrationLag: new Histogram({
    name: 'svc_ledger_integration_lag_seconds',
    help: 'Ledger records: time from their append (the decision) to their integration (an index, in a signed checkpoint).',
    // Finer around one second, the integration interval's default.
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3, 5, 10, 30, 60],
    registers: [eventRegistry],
  }),
  ledgerIntegrated: new Counter({
    name: 'svc_ledger_integrated_records_total',
    help: 'Ledger records integrated (given their index) by this process.',
    registers: [eventRegistry],
  }),
  gatewayRequests: new Counter({
    name: 'svc_gateway_requests_total',
    help: 'Model gateway calls recorded, by the model and provider that served (none when refused before routing) and outcome.',
    labelNames: ['model', 'provider', 'outcome'] as const,
    registers: [eventRegistry],
  }),
  gatewayTokens: new Counter({
    name: 'svc_gateway_tokens_total',
    help: 'Tokens counted by the vendors, by model, provider and direction (input, output).',
    labelNames: ['model', 'provider', 'direction'] as const,
    registers: [eventRegistry],
  }),
  gatewayCost: new Counter({
    name: 'svc_gateway_cost_usd_total',
    help: 'Cost of gateway calls in US dollars, at the configured prices, by model and provider.',
    labelNames: ['model', 'provider'] as const,
    registers: [eventRegistry],
  }),
  upstreamDuration: new Histogram({
    name: 'svc_gateway_upstream_duration_seconds',
    help: 'One upstream attempt: time to the answer (to the first byte for a stream), by model, provider and result.',
    labelNames: ['model', 'provider', 'result'] as const,
    buckets: SECONDS,
    registers: [eventRegistry],
  }),
  budgetSteps: new Counter({
    name: 'svc_gateway_budget_steps_total',
    help: 'Budget ladder steps taken on gateway requests (nudge, downgrade, approval, block).',
    labelNames: ['step'] as const,
    registers: [eventRegistry],
  }),
  dataLossFindings: new Counter({
    name: 'svc_gateway_data_loss_findings_total',
    help: 'Sensitive data found in prompts and answers, by kind and by what was done (redact, block).',
    labelNames: ['kind', 'mode'] as const,
    registers: [eventRegistry],
  }),
  mcpCalls: new Counter({
    name: 'svc_mcp_calls_total',
    help: 'MCP tool calls through the proxy, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [eventRegistry],
  }),
  webhookAttempts: new Counter({
    name: 'svc_webhook_delivery_attempts_total',
    help: 'Outbound webhook delivery attempts, by result (delivered, failed: will retry, gave_up).',
    labelNames: ['result'] as const,
    registers: [eventRegistry],
  }),
  witnessSubmissions: new Counter({
    name: 'svc_ledger_witness_submissions_total',
    help: 'Ledger checkpoints sent to witnesses, by witness (its key name) and result: cosigned, or why not (conflict, refused, failed, unreachable, invalid).',
    labelNames: ['witness', 'result'] as const,
    registers: [eventRegistry],
  }),
  oauthGrants: new Counter({
    name: 'svc_oauth_grants_total',
    help: 'OAuth token requests, by grant type and outcome (issued, or the OAuth error code).',
    labelNames: ['grant_type', 'outcome'] as const,
    registers: [eventRegistry],
  }),
};

/** Seconds elapsed since `startedMs` (performance.now()). */
export const secondsSince = (startedMs: number): number => (performance.now() - startedMs) / 1000;
