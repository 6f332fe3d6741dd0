import type { Request, ResponseToolkit, RouteExtObject } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import type { Clock } from '../lib/clock.js';
import { clientAddress } from './client-address.js';
import { createRateLimiter } from './rate-limit.js';

/**
 * Checks made before authentication, attached to the routes that need them (a route-level
 * onPreAuth step) rather than to every request: each lifecycle step costs every request that
 * passes it about 5% of a small request's time.
 * - CSRF on console writes (SPEC.md 5.3.4): x-svc-csrf: 1 and, when the browser sends Origin, an
 *   Origin of this deployment; else 403 csrf. Every non-GET /api/ route takes `guards.consoleWrite`
 *   (test/architecture/console-writes.test.ts walks the route table to prove it).
 * - Per-address rate limits on public routes: 429 rate_limited with retry-after.
 * Load shedding is hapi's own (server `load` option), checked at dispatch; health routes are
 * answered before hapi sees them (front-door.ts), so they stay exempt.
 */
export interface GuardOptions {
  clock: Clock;
  baseUrl: () => string;
  trustedProxies: readonly string[];
  rateLimits: { publicPerMinute: number; signInPerMinute: number };
}

export type RateLimitKind = 'public' | 'signIn';

export interface Guards {
  /** For every console write route: the CSRF check. */
  consoleWrite: RouteExtObject;
  /** For a public route: the per-address limit of its kind, and the CSRF check for console writes. */
  publicRoute(kind: RateLimitKind, options?: { consoleWrite?: boolean }): RouteExtObject;
}

export function createGuards(options: GuardOptions): Guards {
  const limiters = {
    public: createRateLimiter({ limit: options.rateLimits.publicPerMinute, clock: options.clock }),
    signIn: createRateLimiter({ limit: options.rateLimits.signInPerMinute, clock: options.clock }),
  };
  const csrf = (request: Request) => checkCsrf(request, options.baseUrl);
  const limit = (request: Request, kind: RateLimitKind) => {
    const decision = limiters[kind].take(clientAddress(request, options.trustedProxies));
    if (!decision.allowed) throw new AppError('rate_limited', { headers: { 'retry-after': String(decision.resetSeconds) } });
  };
  return {
    consoleWrite: { method: (request: Request, h: ResponseToolkit) => { csrf(request); return h.continue; } },
    publicRoute(kind, routeOptions = {}) {
      return {
        method: (request: Request, h: ResponseToolkit) => {
          // CSRF first: a cross-site request should not spend the victim's rate budget.
          if (routeOptions.consoleWrite) csrf(request);
          limit(request, kind);
          return h.continue;
        },
      };
    },
  };
}

function checkCsrf(request: Request, baseUrl: () => string): void {
  if (request.method === 'get' || request.method === 'head') return;
  if (request.headers['x-svc-csrf'] !== '1') {
    throw new AppError('csrf', { message: 'Console writes need the header x-svc-csrf: 1.' });
  }
  const origin = request.headers.origin;
  if (origin !== undefined && !originMatches(request, String(origin), new URL(baseUrl()).origin)) {
    throw new AppError('csrf', { message: `Origin ${String(origin).slice(0, 200)} is not this deployment.`, fix: 'Send console writes from pages served by this deployment.' });
  }
}

/** The Origin must be the configured public origin, or the origin the request was sent to. */
function originMatches(request: Request, origin: string, deployment: string): boolean {
  if (origin === deployment) return true;
  const host = request.headers.host;
  if (typeof host !== 'string') return false;
  try {
    const parsed = new URL(origin);
    return parsed.host === host && (parsed.protocol === 'http:' || parsed.protocol === 'https:');
  } catch {
    return false;
  }
}
