import type { ErrorType } from '../errors/catalogue.js';
import type { RouteRow } from './openapi.js';

/**
 * The errors a route can answer with, as the OpenAPI document lists them, derived from what the
 * route declares (no list kept by hand beside the routes):
 * - its credential: each strategy's refusals;
 * - its validation: the route's validation types, else invalid_request; a body: invalid_json and
 *   body_too_large; an id in the path: not_found;
 * - its scopes and limits (service-token scope, key scope, the gate's per-agent rate);
 * - what the route's own logic adds (`plugins.svc.errors`);
 * - and what any route may answer: overloaded and internal, store_unavailable for writes.
 */
const BY_STRATEGY: Record<string, ErrorType[]> = {
  session: ['unauthenticated', 'forbidden'],
  'session-host': ['unauthenticated', 'forbidden'],
  'agent-key': ['unauthenticated', 'invalid_api_key'],
  'workspace-key': ['unauthenticated', 'invalid_api_key'],
  'service-token': ['unauthenticated', 'invalid_token', 'token_expired'],
};

export function routeErrors(row: RouteRow): ErrorType[] {
  const out = new Set<ErrorType>();
  const write = row.method !== 'get';
  for (const strategy of row.auth === false ? [] : row.auth) {
    for (const type of BY_STRATEGY[strategy] ?? (strategy.startsWith('signature:') ? ['unauthenticated'] : []))
      out.add(type as ErrorType);
    if (write && strategy.startsWith('session')) out.add('csrf');
  }
  const { svc, validate } = row;
  if (validate.payload || validate.query || validate.params) {
    out.add(svc.validationType ?? 'invalid_request');
    for (const type of Object.values(svc.validationTypeByField ?? {})) out.add(type);
  }
  if (write && row.method !== 'delete') {
    out.add('invalid_json');
    out.add('body_too_large');
  }
  if (/\{[a-z]*id\}/i.test(row.path)) out.add('not_found');
  if (svc.tokenScope) out.add('missing_scope');
  if (svc.keyScope === 'admin') out.add('forbidden');
  if (svc.gateRateLimit) out.add('rate_limited');
  for (const type of svc.errors ?? []) out.add(type);
  if (write) out.add('store_unavailable');
  out.add('overloaded');
  out.add('internal');
  return [...out];
}
