import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ParentBasedSampler, AlwaysOnSampler, TracerProvider } from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';

/**
 * The OpenTelemetry SDK, started by the server only when an OTLP endpoint is configured (the
 * standard OTEL_EXPORTER_OTLP_ENDPOINT, or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): otherwise nothing
 * here runs, the API stays a no-op, and nothing is kept or sent.
 *
 * Rules:
 * - Spans are made by explicit calls (lib/tracing.ts); no module is patched (the single
 *   executable is one esbuild bundle, where require hooks see nothing).
 * - Export never blocks a request: spans are batched in memory (bounded queue: past it new spans
 *   are dropped, not waited for) and sent over OTLP/HTTP (JSON) in the background. An unreachable
 *   collector costs dropped spans, never a slower or failed request.
 * - A sampled-out incoming traceparent is honoured (parent-based sampling); with no parent,
 *   every request is traced.
 * - One SDK per process (the API's globals): started once, shut down (flushed, bounded) on stop.
 */
export interface TracingOptions {
  otlpEndpoint: string | null;
  otlpTracesEndpoint: string | null;
  serviceName: string;
  serviceVersion: string;
}

export interface Tracing {
  /** Where spans are sent. */
  readonly url: string;
  /** Sends what is queued (bounded wait), then stops; the API is a no-op again. */
  shutdown(): Promise<void>;
}

let running: Tracing | null = null;

/** The traces URL: the traces endpoint as given, or the base endpoint with /v1/traces (the OTLP spec's rule). */
export function tracesUrl(options: Pick<TracingOptions, 'otlpEndpoint' | 'otlpTracesEndpoint'>): string | null {
  if (options.otlpTracesEndpoint) return options.otlpTracesEndpoint;
  if (!options.otlpEndpoint) return null;
  return `${options.otlpEndpoint.replace(/\/+$/, '')}/v1/traces`;
}

export function startTracing(options: TracingOptions): Tracing | null {
  const url = tracesUrl(options);
  if (!url) return null;
  if (running) return running;
  const exporter = new OTLPTraceExporter({ url, timeoutMillis: 5_000 });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: options.serviceName,
      [ATTR_SERVICE_VERSION]: options.serviceVersion,
    }),
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        maxQueueSize: 4_096,
        maxExportBatchSize: 512,
        scheduledDelayMillis: 1_000,
        exportTimeoutMillis: 5_000,
      }),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const tracing: Tracing = {
    url,
    async shutdown() {
      if (running !== tracing) return;
      running = null;
      await provider.shutdown().catch(() => undefined);
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
  running = tracing;
  return tracing;
}
