import { distance } from 'fastest-levenshtein';
import type { Request, Server } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';

/**
 * Unmatched requests: 405 method_not_allowed with `allow` when the path exists under other
 * methods, else 404 route_not_found with `didYouMean`, the nearest real "METHOD /path" by edit
 * distance over the route table (parameters compared as written, e.g. {id}).
 */
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

export function unmatched(server: Server, request: Request): AppError {
  const path = request.path;
  const method = request.method.toUpperCase();
  const allowed = METHODS.filter((m) => m !== method && server.match(m, path) !== null);
  if (allowed.length > 0) {
    if (allowed.includes('GET')) allowed.splice(1, 0, 'HEAD' as never);
    return new AppError('method_not_allowed', {
      message: `${method} is not accepted on ${path}; it accepts ${allowed.join(', ')}.`,
      headers: { allow: allowed.join(', ') },
    });
  }
  return new AppError('route_not_found', {
    message: `No route for ${method} ${path}.`,
    details: { didYouMean: nearestRoute(server, method, path) },
  });
}

function nearestRoute(server: Server, method: string, path: string): string {
  const wanted = `${method} ${path}`;
  let best = '';
  let bestScore = Infinity;
  for (const route of server.table()) {
    if (route.method === '*' || route.settings.isInternal) continue;
    const candidate = `${route.method.toUpperCase()} ${route.path}`;
    const score = distance(wanted, candidate);
    if (score < bestScore) {
      best = candidate;
      bestScore = score;
    }
  }
  return best;
}
