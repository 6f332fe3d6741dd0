import type { Request, ResponseToolkit, RouteExtObject } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import type { Clock } from '../lib/clock.js';
import type { WindowCounters } from '../store/counters.js';
import { clientAddress, rateKeyOf } from './client-address.js';
import { createRateLimiter } from './rate-limit.js';

/**
 * Checks made before authentication, attached to the routes that need them (a route-level
 * onPreAuth step) rather than to every request: each lifecycle step costs every request that
 * passes it about 5% of a small request's time.
 * - CSRF on console writes (docs/security.md#security-model): x-svc-csrf: 1 and, when the browser sends Origin, an
 *   Origin of this deployment; else 403 csrf. Every non-GET /api/ route takes `guards.consoleWrite`
 *   (test/architecture/console-writes.test.ts walks the route table to prove it).
 * - Per-address rate limits on public routes: 429 rate_limited with retry-after.
 * Load shedding is hapi's own (server `load` option), checked at dispatch; health routes are
 * answered before hapi sees them (front-door.ts), so they stay exempt.
 */
export interface GuardOptions {
  clock: Clock;
  baseUrl: () => string;
  /** A public address was configured: then only its origin is this deployment's. */
  baseUrlConfigured: boolean;
  trustedProxies: readonly string[];
  rateLimits: { publicPerMinute: number; signInPerMinute: number };
  /** The store's shared counters: the limits hold across processes and instances. */
  counters: WindowCounters;
}

export type RateLimitKind = 'public' | 'signIn';

export interface Guards {
  /**
   * Counts a sign-in attempt at an account (by email), whatever address it comes from; rejects
   * with 429 rate_limited past the limit (503 when the store cannot count).
   */
  accountAttempt(email: string): Promise<void>;
  /** For every console write route: the CSRF check. */
  consoleWrite: RouteExtObject;
  /**
   * For a public route: the per-address limit of its kind, and the CSRF check for console writes
   * or, for an HTML form's post (which cannot send x-svc-csrf), the Origin check alone.
   */
  publicRoute(kind: RateLimitKind, options?: { consoleWrite?: boolean; formPost?: boolean }): RouteExtObject;
}

export function createGuards(options: GuardOptions): Guards {
  const { clock, counters } = options;
  const limiters = {
    public: createRateLimiter({ limit: options.rateLimits.publicPerMinute, scope: 'public', counters, clock }),
    signIn: createRateLimiter({ limit: options.rateLimits.signInPerMinute, scope: 'signIn', counters, clock }),
    // Password guessing from many addresses at one account: the same budget per account.
    account: createRateLimiter({ limit: options.rateLimits.signInPerMinute, scope: 'account', counters, clock }),
  };
  const csrf = (request: Request) => checkCsrf(request, options.baseUrl, options.baseUrlConfigured);
  const sameOrigin = (request: Request) => checkOrigin(request, options.baseUrl, options.baseUrlConfigured);
  const refuse = (decision: { allowed: boolean; resetSeconds: number }) => {
    if (!decision.allowed)
      throw new AppError('rate_limited', { headers: { 'retry-after': String(decision.resetSeconds) } });
  };
  const limit = async (request: Request, kind: RateLimitKind) => {
    refuse(await limiters[kind].take(rateKeyOf(clientAddress(request, options.trustedProxies))));
    // Sign-in bodies name an account; the payload is not parsed yet, so the account is counted
    // where the body is read (accountAttempt, below).
  };
  return {
    async accountAttempt(email: string) {
      refuse(await limiters.account.take(email.trim().toLowerCase()));
    },
    consoleWrite: {
      method: (request: Request, h: ResponseToolkit) => {
        csrf(request);
        return h.continue;
      },
    },
    publicRoute(kind, routeOptions = {}) {
      return {
        method: async (request: Request, h: ResponseToolkit) => {
          // CSRF first: a cross-site request should not spend the victim's rate budget.
          if (routeOptions.consoleWrite) csrf(request);
          if (routeOptions.formPost) sameOrigin(request);
          await limit(request, kind);
          return h.continue;
        },
      };
    },
  };
}

function checkCsrf(request: Request, baseUrl: () => string, exact: boolean): void {
  if (request.method === 'get' || request.method === 'head') return;
  if (request.headers['x-svc-csrf'] !== '1') {
    throw new AppError('csrf', { message: 'Console writes need the header x-svc-csrf: 1.' });
  }
  checkOrigin(request, baseUrl, exact);
}

/** When the browser sends Origin (it does on every cross-site post), it must be this deployment's. */
function checkOrigin(request: Request, baseUrl: () => string, exact: boolean): void {
  const origin = request.headers.origin;
  if (origin !== undefined && !originMatches(request, String(origin), new URL(baseUrl()).origin, exact)) {
    throw new AppError('csrf', {
      message: `Origin ${String(origin).slice(0, 200)} is not this deployment.`,
      fix: 'Send console writes from pages served by this deployment.',
    });
  }
}

/**
 * The Origin must be the configured public origin exactly; with none configured, the origin the
 * request was sent to (its Host, over the scheme the server listens on).
 */
function originMatches(request: Request, origin: string, deployment: string, exact: boolean): boolean {
  if (origin === deployment) return true;
  if (exact) return false;
  const host = request.headers.host;
  if (typeof host !== 'string') return false;
  try {
    const parsed = new URL(origin);
    return parsed.host === host && parsed.protocol === new URL(deployment).protocol;
  } catch {
    return false;
  }
}
