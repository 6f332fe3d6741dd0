import type { VendorJson as Json } from '../vendor-json.js';
import { OPENAI_TOOL_ID_MAX, rekeyChatToolIds } from '../translate/tool-ids.js';
import { dataEvent } from './sse-source.js';
import { openaiFallback, usualFault } from '../failover.js';
import type { VendorAdapter } from './vendor.js';

/**
 * Azure OpenAI: the OpenAI chat-completions shape, at
 * `{resource}/openai/deployments/{deployment}/chat/completions?api-version={apiVersion}`, with
 * the key in an `api-key` header; tool-call ids within its 40 characters (translate/tool-ids.ts). The model's `upstreamModel` is the deployment's name. Azure's
 * answers name the underlying model, so every streamed chunk is re-serialised with the client's
 * model (a content-filter chunk without choices passes on as it came).
 *
 * Errors: the usual rule (401/403 a wrong key, 429 throttling, 5xx); besides, 404 is a deployment
 * that does not exist under that name, the operator's configuration, so it fails over too.
 * `context_length_exceeded` and the content filter are marked for the profile's fallbacks.
 */
export const azureOpenai: VendorAdapter = {
  pivot: 'openai',
  request(body, a) {
    const deployment = encodeURIComponent(a.model.upstreamModel);
    const version = encodeURIComponent(a.provider.apiVersion ?? '');
    return {
      path: `/openai/deployments/${deployment}/chat/completions?api-version=${version}`,
      headers: { 'api-key': a.provider.apiKey ?? '', traceparent: a.traceparent },
      body: JSON.stringify(rekeyChatToolIds(body, OPENAI_TOOL_ID_MAX)),
    };
  },
  fault(status, _headers, body) {
    if (status === 404) return { failure: `HTTP 404 ${String(body?.error?.code ?? 'DeploymentNotFound')}` };
    const usual = usualFault(status);
    if (usual.failure !== null) return usual;
    // Azure's content filter: 400 code content_filter (innererror ResponsibleAIPolicyViolation).
    const fallback = openaiFallback(body);
    return fallback ? { failure: null, fallback } : usual;
  },
  answer: (body) => body,
  sse: (a) => (batch) =>
    batch.map((e) => {
      if (e.data === '[DONE]') return e;
      const chunk = JSON.parse(e.data) as Json;
      return dataEvent({ ...chunk, model: a.clientModel });
    }),
};
