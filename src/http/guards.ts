import { Heavy } from '@hapi/heavy';
import type { Plugin, Request, Server } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import type { Clock } from '../lib/clock.js';
import { clientAddress } from './client-address.js';
import { createRateLimiter } from './rate-limit.js';
import { svcOptions } from './route-options.js';

/**
 * Checks made before authentication:
 * - load shedding: over the configured event-loop delay, heap or RSS, answer 503 overloaded with
 *   retry-after (health routes exempt, so orchestrators still see the process);
 * - CSRF on console writes: every non-GET/HEAD /api/ request carries x-svc-csrf: 1 and, when the
 *   browser sends Origin, the Origin is this deployment's (403 csrf);
 * - per-address rate limits on public routes (429 rate_limited with retry-after).
 */
export interface GuardOptions {
  clock: Clock;
  baseUrl: () => string;
  trustedProxies: readonly string[];
  load: { sampleIntervalMs: number; maxEventLoopDelayMs: number; maxHeapUsedBytes: number; maxRssBytes: number; retryAfterSeconds: number };
  rateLimits: { publicPerMinute: number; signInPerMinute: number };
}

const HEALTH_PATHS = new Set(['/healthz', '/readyz']);

export const guards: Plugin<GuardOptions> = {
  name: 'svc-guards',
  register(server: Server, options: GuardOptions) {
    // One onPreAuth extension does all three checks: every extension is a lifecycle step that
    // each request pays for (about 5% of a small request's time here).
    let heavy: Heavy | undefined;
    if (options.load.sampleIntervalMs > 0) {
      const sampler = new Heavy({
        sampleInterval: options.load.sampleIntervalMs,
        maxEventLoopDelay: options.load.maxEventLoopDelayMs,
        maxHeapUsedBytes: options.load.maxHeapUsedBytes,
        maxRssBytes: options.load.maxRssBytes,
      });
      heavy = sampler;
      server.ext('onPreStart', () => sampler.start());
      server.ext('onPostStop', () => sampler.stop());
    }

    const limiters = {
      public: createRateLimiter({ limit: options.rateLimits.publicPerMinute, clock: options.clock }),
      signIn: createRateLimiter({ limit: options.rateLimits.signInPerMinute, clock: options.clock }),
    };
    server.ext('onPreAuth', (request, h) => {
      if (heavy && !HEALTH_PATHS.has(request.path)) {
        try {
          heavy.check();
        } catch {
          throw new AppError('overloaded', { headers: { 'retry-after': String(options.load.retryAfterSeconds) } });
        }
      }
      if (request.method !== 'get' && request.method !== 'head' && request.path.startsWith('/api/')) checkCsrf(request, options.baseUrl);
      const kind = svcOptions(request.route.settings).rateLimit;
      if (kind) {
        const decision = limiters[kind].take(clientAddress(request, options.trustedProxies));
        if (!decision.allowed) throw new AppError('rate_limited', { headers: { 'retry-after': String(decision.resetSeconds) } });
      }
      return h.continue;
    });
  },
};

function checkCsrf(request: Request, baseUrl: () => string): void {
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
