import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/log.js';
import type { Settings } from '../settings/load.js';
import type { Store } from '../store/index.js';
import { createMetrics, type Metrics } from './metrics.js';
import { startMetricsListener, type MetricsListener } from './metrics-listener.js';
import type { Tracing } from './tracing.js';

export { instrumentStore } from './store.js';
export type { Metrics } from './metrics.js';

/**
 * What the server starts and stops for observability (docs/operations.md, "Observability"):
 * - metrics: GET /metrics on the main listener when a scrape token is set, and/or on a
 *   127.0.0.1-only listener at `metricsPort` without one; neither configured, no /metrics at all;
 * - traces: the OpenTelemetry SDK when an OTLP endpoint is set; otherwise none.
 */
export interface Observability {
  /** The exposition, when metrics are on in any form. */
  metrics: Metrics | null;
  /** The scrape token for GET /metrics on the main listener, or null (the route is absent). */
  scrapeToken: string | null;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The separate metrics listener's address once started (`--metrics-port`), else null. */
  metricsUrl(): string | null;
}

export function createObservability(deps: {
  settings: Settings['observability'];
  store: Store;
  clock: Clock;
  log: Logger;
  models: ReadonlyArray<{ id: string; provider: string }>;
  circuitOpen(modelId: string): boolean;
  version: string;
  /** The ledger's maximum merge delay (append to integration), as configured. */
  maxMergeDelayMs?: number;
}): Observability {
  const { settings } = deps;
  const on = settings.metricsToken !== null || settings.metricsPort !== null;
  const metrics = on
    ? createMetrics({
        store: deps.store,
        clock: deps.clock,
        models: deps.models,
        circuitOpen: deps.circuitOpen,
        ...(deps.maxMergeDelayMs === undefined ? {} : { maxMergeDelayMs: deps.maxMergeDelayMs }),
      })
    : null;
  let listener: MetricsListener | null = null;
  let tracing: Tracing | null = null;
  return {
    metrics,
    scrapeToken: settings.metricsToken,
    async start() {
      // The SDK and its exporter are loaded only when traces are on: no cost to a start without them.
      if (settings.otlpEndpoint !== null || settings.otlpTracesEndpoint !== null) {
        const { startTracing } = await import('./tracing.js');
        tracing = startTracing({ ...settings, serviceVersion: deps.version });
      }
      if (tracing) deps.log.info({ url: tracing.url }, 'traces are exported over OTLP/HTTP');
      if (metrics && settings.metricsPort !== null) {
        listener = await startMetricsListener(metrics, settings.metricsPort);
        deps.log.info({ address: `${listener.url()}/metrics` }, 'metrics listening (127.0.0.1 only, no token)');
      }
    },
    async stop() {
      await listener?.close();
      listener = null;
      await tracing?.shutdown();
      tracing = null;
    },
    metricsUrl: () => (listener ? `${listener.url()}/metrics` : null),
  };
}
