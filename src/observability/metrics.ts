import { timingSafeEqual, createHash } from 'node:crypto';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { Clock } from '../lib/clock.js';
import { bounded, eventRegistry } from '../lib/metrics.js';
import type { Store } from '../store/index.js';
import { observabilityRepo } from './repo.js';

/**
 * The exposition of GET /metrics: the event series recorded where things happen (lib/metrics.ts),
 * the process and event-loop series, and gauges read from the store and the gateway's circuit
 * breakers at scrape time. Labels never carry an id of an agent, key, workspace or person: the
 * gauges are totals over every workspace of this deployment.
 */
export interface MetricsSources {
  store: Store;
  clock: Clock;
  /** The gateway's configured models (ids and providers: the operator's own, bounded, set). */
  models: ReadonlyArray<{ id: string; provider: string }>;
  circuitOpen(modelId: string): boolean;
  /** The ledger's maximum merge delay (append to integration), as configured. */
  maxMergeDelayMs?: number;
}

export interface Metrics {
  contentType: string;
  /** The exposition text, in the Prometheus text format 0.0.4. */
  render(): Promise<string>;
}

let processSeries = false;

export function createMetrics(sources: MetricsSources): Metrics {
  // Process and event-loop series: once per process (they sample the process, not an app).
  if (!processSeries) {
    collectDefaultMetrics({ register: eventRegistry, prefix: 'svc_' });
    // prom-client names three gauges `_total`, a counter's suffix that Prometheus's lint
    // (promtool check metrics) refuses on a gauge; the same numbers are the sums of their
    // per-type gauges (sum(svc_nodejs_active_handles)), which stay.
    for (const name of ['handles', 'requests', 'resources'])
      eventRegistry.removeSingleMetric(`svc_nodejs_active_${name}_total`);
    processSeries = true;
  }
  const repo = observabilityRepo(sources.store);
  const own = new Registry();
  // The registry starts every gauge's collect at once, in the order made (so the first of a
  // shared pass below starts it afresh and the others of the scrape reuse it).
  const gauge = (name: string, help: string, read: () => Promise<number>) =>
    new Gauge({
      name,
      help,
      registers: [own],
      async collect() {
        this.set(await read());
      },
    });
  gauge('svc_approvals_waiting', 'Approvals waiting for a person, in every workspace.', () => repo.approvalsWaiting());
  gauge('svc_agents_stopped', 'Agents stopped (holding at least one hold), in every workspace.', () =>
    repo.agentsStopped(),
  );
  gauge('svc_stop_all_active', 'Workspaces where "stop every agent" is in force.', () => repo.workspacesStoppedAll());
  // One pass over the ledger heads gives the three ledger series.
  let ledger: ReturnType<typeof repo.ledger> | null = null;
  const ledgerNow = () => (ledger ??= repo.ledger(sources.clock.now()));
  gauge('svc_ledger_records', 'Records in the ledgers of every workspace.', async () => {
    ledger = null;
    return (await ledgerNow()).records;
  });
  gauge(
    'svc_ledger_uncheckpointed_records',
    'Ledger records not yet covered by a signed checkpoint.',
    async () => (await ledgerNow()).unCheckpointed,
  );
  gauge(
    'svc_ledger_seconds_since_checkpoint',
    'For ledgers with records not yet checkpointed: the longest time since their last checkpoint (0 when all are covered).',
    async () => (await ledgerNow()).secondsSinceCheckpoint,
  );
  let waiting: ReturnType<typeof repo.ledgerWaiting> | null = null;
  gauge(
    'svc_ledger_waiting_records',
    'Ledger records appended and not yet integrated (no index yet), in every workspace.',
    async () => {
      waiting = repo.ledgerWaiting(sources.clock.now());
      return (await waiting).records;
    },
  );
  gauge(
    'svc_ledger_oldest_waiting_seconds',
    'Age of the oldest ledger record waiting to be integrated (0 when none waits).',
    async () => (await (waiting ??= repo.ledgerWaiting(sources.clock.now()))).oldestSeconds,
  );
  if (sources.maxMergeDelayMs !== undefined) {
    const mmd = sources.maxMergeDelayMs / 1000;
    gauge(
      'svc_ledger_max_merge_delay_seconds',
      "The ledger's maximum merge delay as configured: the integration interval plus the integrator lease's expiry.",
      () => Promise.resolve(mmd),
    );
  }
  let outbox: ReturnType<typeof repo.outbox> | null = null;
  gauge('svc_webhook_outbox_depth', 'Webhook deliveries waiting to be sent (first tries and retries).', async () => {
    outbox = repo.outbox(sources.clock.now());
    return (await outbox).depth;
  });
  gauge(
    'svc_webhook_outbox_oldest_seconds',
    'Age of the oldest delivery still waiting in the outbox (0 when it is empty).',
    async () => (await (outbox ??= repo.outbox(sources.clock.now()))).oldestSeconds,
  );
  new Gauge({
    name: 'svc_gateway_circuit_open',
    help: "1 while a gateway model's circuit breaker is open (its upstream is skipped), else 0.",
    labelNames: ['model', 'provider'] as const,
    registers: [own],
    collect() {
      for (const m of sources.models)
        this.set({ model: bounded(m.id), provider: bounded(m.provider) }, sources.circuitOpen(m.id) ? 1 : 0);
    },
  });
  const merged = Registry.merge([eventRegistry, own]);
  return {
    contentType: merged.contentType,
    render: () => merged.metrics(),
  };
}

/** Whether `presented` is the scrape token, compared in constant time (over hashes: lengths may differ). */
export function scrapeTokenMatches(expected: string, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(expected), digest(presented));
}
