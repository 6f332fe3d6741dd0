import { metrics } from '../lib/metrics.js';

/**
 * Per-request latency series. The route label is the route's template (`/api/w/{wid}/agents`),
 * never the path as sent, so the set of values is the route table's; the status is its class.
 */
const GATEWAY_ROUTES = new Set([
  '/v1/chat/completions',
  '/v1/messages',
  '/v1/responses',
  '/v1/embeddings',
  '/v1/messages/count_tokens',
]);

export function observeRequest(entry: { route: string; method: string; status: number; seconds: number }): void {
  const status = entry.status === 0 ? 'none' : `${Math.floor(entry.status / 100)}xx`;
  metrics.httpDuration.observe({ route: entry.route, method: entry.method, status }, entry.seconds);
  if (entry.route === '/v1/actions/authorize') metrics.authorizeDuration.observe({ status }, entry.seconds);
  else if (entry.route === '/v1/verify') metrics.verifyDuration.observe({ status }, entry.seconds);
  else if (GATEWAY_ROUTES.has(entry.route))
    metrics.gatewayDuration.observe({ route: entry.route, status }, entry.seconds);
}
