import { openaiFallback, usualFault } from '../failover.js';
import { DEFAULT_MAX_TOKENS } from '../translate/requests.js';
import { OPENAI_TOOL_ID_MAX, rekeyChatToolIds } from '../translate/tool-ids.js';
import type { VendorJson as Json } from '../vendor-json.js';
import type { VendorAdapter } from './vendor.js';

/**
 * OpenAI, and any OpenAI-compatible vendor (the `openai` kind): chat completions at
 * `{baseUrl}/chat/completions` with `Authorization: Bearer`, its own shape as the pivot (tool-call
 * ids within its 40 characters: translate/tool-ids.ts). Its events pass as they came, the
 * vendor's model renamed to the client's. Besides chat: `/embeddings`, `/responses` (passed
 * through for a provider marked `responses: true`; max_output_tokens bounded so the reservation
 * bounds the call). Errors: the usual rule; a 400 `context_length_exceeded` or a content-policy
 * code is marked for the profile's fallbacks.
 */
const bearer = (a: { provider: { apiKey: string | null }; traceparent: string }) => ({
  authorization: `Bearer ${a.provider.apiKey ?? ''}`,
  traceparent: a.traceparent,
});

export const openai: VendorAdapter = {
  pivot: 'openai',
  request: (body, a) => ({
    path: '/chat/completions',
    headers: bearer(a),
    body: JSON.stringify(rekeyChatToolIds(body, OPENAI_TOOL_ID_MAX)),
  }),
  fault(status, _headers, body) {
    const usual = usualFault(status);
    if (usual.failure !== null) return usual;
    const fallback = openaiFallback(body);
    return fallback ? { failure: null, fallback } : usual;
  },
  answer: (body) => body,
  sse: () => (batch) => batch,
  streamModel: (a) => a.model.upstreamModel,
  embeddings: (a) => ({
    path: '/embeddings',
    headers: bearer(a),
    body: JSON.stringify({ ...a.body, model: a.model.upstreamModel }),
  }),
  responses(a) {
    const body: Json = { ...a.body, model: a.model.upstreamModel };
    body.max_output_tokens ??= DEFAULT_MAX_TOKENS;
    return { path: '/responses', headers: bearer(a), body: JSON.stringify(body) };
  },
};
