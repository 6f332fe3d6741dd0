import type { GatewayModel, GatewayProvider } from '../settings/schema.js';
import { bounded, metrics, secondsSince } from '../lib/metrics.js';
import { SpanKind, SpanStatusCode, startSpan, spanFailed, traceparentOf, withSpan, type Span } from '../lib/tracing.js';
import type { AttemptResult } from './forward.js';
import type { Usage } from './translate/responses.js';
import type { VendorJson as Json } from './vendor-json.js';

/**
 * One upstream attempt, observed: a CLIENT span with the OpenTelemetry GenAI semantic-convention
 * attributes (operation, system, request and response model, token usage, finish reasons) and
 * the upstream latency series. The span is the parent named in the attempt's `traceparent`, so
 * the vendor's own trace (if it keeps one) hangs under it. A stream's span ends with the stream.
 * Never an attribute from the prompt or the answer's text.
 */
/** The semantic conventions' well-known `gen_ai.provider.name` values, by provider kind. */
const GEN_AI_PROVIDER: Record<GatewayProvider['kind'], string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  'azure-openai': 'azure.ai.openai',
  gemini: 'gcp.gemini',
  bedrock: 'aws.bedrock',
};

export async function observeAttempt(
  model: GatewayModel,
  provider: GatewayProvider,
  body: Json,
  run: (traceparent: string | undefined) => Promise<AttemptResult>,
): Promise<AttemptResult> {
  const span = startSpan(`chat ${model.upstreamModel}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': GEN_AI_PROVIDER[provider.kind],
      'gen_ai.provider.name': GEN_AI_PROVIDER[provider.kind],
      'gen_ai.request.model': model.upstreamModel,
      ...(typeof body.max_tokens === 'number' ? { 'gen_ai.request.max_tokens': body.max_tokens } : {}),
      'server.address': hostOf(provider.baseUrl),
      'svc.gateway.model': model.id,
      'svc.gateway.provider': provider.id,
    },
  });
  const started = performance.now();
  const labels = { model: bounded(model.id), provider: bounded(provider.id) };
  let result: AttemptResult;
  try {
    result = await withSpan(span, () => run(traceparentOf(span)));
  } catch (err) {
    spanFailed(span, err);
    span.end();
    metrics.upstreamDuration.observe({ ...labels, result: 'error' }, secondsSince(started));
    throw err;
  }
  metrics.upstreamDuration.observe({ ...labels, result: result.kind }, secondsSince(started));
  if (!span.isRecording()) return result;
  if (result.kind === 'failed') {
    span.setAttribute('error.type', result.reason);
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  } else if (result.kind === 'refused') {
    span.setAttribute('http.response.status_code', result.status);
    span.setAttribute('error.type', String(result.status));
    span.end();
  } else if (result.kind === 'json') {
    span.setAttribute('gen_ai.response.model', model.upstreamModel);
    usageOn(span, result.usage);
    const reasons = finishReasons(result.body);
    if (reasons.length > 0) span.setAttribute('gen_ai.response.finish_reasons', reasons);
    span.end();
  } else {
    span.setAttribute('gen_ai.response.model', model.upstreamModel);
    void result.done.then(
      (done) => {
        usageOn(span, done.usage);
        if (done.outcome !== 'ok') span.setAttribute('error.type', done.outcome);
        span.end();
      },
      () => span.end(),
    );
  }
  return result;
}

function usageOn(span: Span, usage: Usage | null): void {
  if (!usage) return;
  span.setAttribute('gen_ai.usage.input_tokens', usage.input);
  span.setAttribute('gen_ai.usage.output_tokens', usage.output);
}

/** The answer's finish reasons, in either vendor's shape (the answer is in the client's). */
function finishReasons(body: Json): string[] {
  if (typeof body.stop_reason === 'string') return [body.stop_reason];
  const choices: unknown = body.choices;
  if (!Array.isArray(choices)) return [];
  return choices
    .map((c: unknown) => (c && typeof c === 'object' ? (c as { finish_reason?: unknown }).finish_reason : null))
    .filter((r): r is string => typeof r === 'string');
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}
