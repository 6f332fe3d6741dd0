import { anthropicFallback, usualFault } from '../failover.js';
import { DEFAULT_ANTHROPIC_VERSION } from '../pivot.js';
import type { Attempt } from '../failover.js';
import type { VendorAdapter } from './vendor.js';

/**
 * Anthropic: messages at `{baseUrl}/v1/messages` with `x-api-key`, the client's
 * `anthropic-version` (or a default) and its `anthropic-beta` (the betas its beta-only fields
 * need: context management, effort, thinking...); its own shape as the pivot. Its events pass as
 * they came, the vendor's model renamed to the client's. Besides chat: `/v1/messages/count_tokens`
 * (exact counts). Errors: the usual rule (529 overloaded is throttling); a 400 "prompt is too
 * long" is marked for the profile's context-window fallbacks.
 */
const headers = (a: Attempt): Record<string, string> => ({
  'x-api-key': a.provider.apiKey ?? '',
  'anthropic-version': a.anthropicVersion ?? DEFAULT_ANTHROPIC_VERSION,
  ...(a.anthropicBeta ? { 'anthropic-beta': a.anthropicBeta } : {}),
  traceparent: a.traceparent,
});

export const anthropic: VendorAdapter = {
  pivot: 'anthropic',
  request: (body, a) => ({ path: '/v1/messages', headers: headers(a), body: JSON.stringify(body) }),
  fault(status, _headers, body) {
    const usual = usualFault(status);
    if (usual.failure !== null) return usual;
    const fallback = anthropicFallback(body);
    return fallback ? { failure: null, fallback } : usual;
  },
  answer: (body) => body,
  sse: () => (batch) => batch,
  streamModel: (a) => a.model.upstreamModel,
  countTokens: (a) => ({
    path: '/v1/messages/count_tokens',
    headers: headers(a),
    body: JSON.stringify({ ...a.body, model: a.model.upstreamModel }),
  }),
};
