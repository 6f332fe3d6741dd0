import {
  context,
  ROOT_CONTEXT,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';

/**
 * Spans, through the OpenTelemetry API only. Until the SDK is started (observability/tracing.ts,
 * when OTEL_EXPORTER_OTLP_ENDPOINT is set) every call here is the API's no-op: nothing is kept,
 * nothing is sent, and the request path pays a function call.
 *
 * Rules:
 * - Instrumentation is explicit (no module patching: the single executable is one bundle).
 * - An attribute never holds a secret, a prompt, a body or a header value; a failed span records
 *   the error's type, never its message (an upstream's message may quote what it was sent).
 * - A span never waits on its export: the SDK batches and sends in the background.
 */
const tracer = trace.getTracer('svc');

export { ROOT_CONTEXT, SpanKind, SpanStatusCode, type Attributes, type Span };

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent, when it is not the active context's span (a background job starts a root). */
  parent?: Context;
}

function failed(span: Span, err: unknown): void {
  const type = (err as { type?: unknown; code?: unknown; name?: unknown } | null) ?? {};
  const name = [type.type, type.code, type.name].find((v) => typeof v === 'string') as string | undefined;
  span.setAttribute('error.type', name ?? 'Error');
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** Runs `fn` in a child span of the active one, ended when `fn` settles. */
export async function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = startSpan(name, { ...options, parent });
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** As `inSpan` for synchronous work (signing inside a store write). */
export function inSpanSync<T>(name: string, options: SpanOptions, fn: (span: Span) => T): T {
  const parent = options.parent ?? context.active();
  const span = startSpan(name, { ...options, parent });
  try {
    return context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Starts a span the caller ends (a stream's span ends with its last event). */
export function startSpan(name: string, options: SpanOptions): Span {
  return tracer.startSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes },
    options.parent ?? context.active(),
  );
}

/** Marks a span failed with the error's type (never its message). */
export function spanFailed(span: Span, err: unknown): void {
  failed(span, err);
}

/**
 * The `traceparent` naming `span` as the parent of what is sent next (the propagator the SDK
 * registered), or undefined when nothing records (tracing off): the caller keeps its own.
 */
export function traceparentOf(span: Span): string | undefined {
  if (!span.isRecording()) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  return carrier.traceparent;
}

/** Runs `fn` with `span` active, so that the spans started inside it are its children. */
export function withSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/**
 * The server span of an incoming request, continuing a valid incoming `traceparent`; null when
 * nothing records (tracing off, or a parent that asked not to be sampled).
 */
export function startServerSpan(headers: Record<string, string | string[] | undefined>, method: string): Span | null {
  const parent = propagation.extract(context.active(), headers);
  const span = tracer.startSpan(
    method,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
    parent,
  );
  if (span.isRecording()) return span;
  span.end();
  return null;
}

/**
 * `headers` with the active context's trace added (`traceparent`, through the propagator the SDK
 * registered), for a request sent on behalf of whatever is running now (a shared connection's
 * request belongs to the call that sends it). Unchanged when nothing records.
 */
export function withActiveTrace(headers: Headers): Headers {
  propagation.inject(context.active(), headers, {
    set: (carrier, key, value) => carrier.set(key, value),
  });
  return headers;
}

/** The same for headers held as a plain object (lower-case names), as undici's `request` takes them. */
export function withActiveTraceIn(headers: Record<string, string>): Record<string, string> {
  propagation.inject(context.active(), headers, {
    set: (carrier, key, value) => {
      carrier[key.toLowerCase()] = value;
    },
  });
  return headers;
}
