import ipaddr from 'ipaddr.js';
import { group, int, list, number, string } from './define.js';

/**
 * The HTTP server and what guards it: where it listens, its timeouts, its body and load limits,
 * rate limits, lockouts and console sessions.
 */

export const server = group({
  host: string({
    joi: (s) => s.hostname(),
    default: '127.0.0.1',
    env: 'SVC_HOST',
    flag: '--host',
    doc: 'the address to listen on',
  }),
  port: int({
    min: 0,
    max: 65535,
    default: 8080,
    env: 'SVC_PORT',
    flag: '--port',
    doc: 'the port; 0 picks a free one',
  }),
  /** Processes serving one port over one store (Node's cluster module); 1 is no cluster. */
  workers: int({
    min: 1,
    max: 64,
    default: 1,
    env: 'SVC_WORKERS',
    flag: '--workers',
    doc: "processes serving the one port over the one store (Node's cluster module); 1 runs no cluster",
  }),
  headersTimeoutMs: int({
    min: 100,
    default: 2000,
    doc: 'a client must send its headers within this time (slow clients are cut off)',
  }),
  requestTimeoutMs: int({ min: 100, default: 10000, doc: 'a client must send its whole request within this time' }),
  connectionsCheckingIntervalMs: int({
    min: 100,
    default: 1000,
    doc: 'how often Node checks the two timeouts above',
  }),
  shutdownTimeoutMs: int({
    min: 0,
    default: 10000,
    doc: 'how long the drain after SIGTERM may last; connections still open then are cut',
  }),
  trustedProxies: list(
    string({
      joi: (s) =>
        s
          .custom((value: string) => {
            if (value.includes('/')) ipaddr.parseCIDR(value);
            else if (!ipaddr.isValid(value)) throw new Error('not an address');
            return value;
          })
          .messages({ 'any.custom': '{{#label}} must be an address or a CIDR range' }),
    }),
    {
      default: [],
      env: 'SVC_TRUSTED_PROXIES',
      doc: 'addresses and CIDR ranges of reverse proxies whose `x-forwarded-for` is believed; none: the socket address is the client',
    },
  ),
});

export const limits = group({
  bodyBytes: int({
    min: 1024,
    default: 1048576,
    env: 'SVC_BODY_LIMIT_BYTES',
    doc: 'request body limit for most routes (`413 body_too_large`; see [Body limits](operations.md#body-limits))',
  }),
});

export const load = group({
  sampleIntervalMs: int({ min: 0, default: 1000, doc: 'how often the load is sampled; 0 turns load shedding off' }),
  maxEventLoopDelayMs: int({
    min: 0,
    default: 1000,
    doc: "hapi's load limits: above this event-loop delay, `503 overloaded` with `retry-after`; `/healthz` and `/readyz` are answered ahead of hapi and never shed. 0: no limit",
  }),
  maxHeapUsedBytes: int({ min: 0, default: 0, doc: 'shed load above this heap use; 0: no limit' }),
  maxRssBytes: int({ min: 0, default: 0, doc: 'shed load above this resident size; 0: no limit' }),
  retryAfterSeconds: int({
    min: 1,
    default: 5,
    doc: 'the `retry-after` of `503 overloaded` and `503 store_unavailable`',
  }),
});

export const rateLimits = group({
  publicPerMinute: int({
    min: 1,
    default: 120,
    env: 'SVC_PUBLIC_RATE_PER_MINUTE',
    doc: 'requests per client address per minute on public routes (`429 rate_limited` with `retry-after`)',
  }),
  signInPerMinute: int({
    min: 1,
    default: 10,
    env: 'SVC_SIGNIN_RATE_PER_MINUTE',
    doc: 'sign-in attempts per client address per minute (`429 rate_limited` with `retry-after`)',
  }),
  gatePerMinute: int({
    min: 1,
    default: 600,
    env: 'SVC_GATE_RATE_PER_MINUTE',
    doc: 'gate requests per agent per minute: one budget for the HTTP gate routes and `/mcp` (`authorize_action` and proxied tool calls, [Tools and credentials](mcp-oauth.md#tools-and-credentials))',
  }),
});

/** Per-account lockouts (people/lockouts.ts): wrong current passwords and wrong two-factor codes. */
export const lockout = group({
  maxFailures: int({
    min: 1,
    max: 100,
    default: 5,
    env: 'SVC_LOCKOUT_MAX_FAILURES',
    doc: 'wrong current passwords (on a change) or two-factor codes in a row before an account is locked for that kind',
  }),
  minutes: number({
    min: 0.01,
    max: 1440,
    default: 15,
    env: 'SVC_LOCKOUT_MINUTES',
    doc: "the first lockout's length; each further one in a row lasts twice as long",
  }),
  maxMinutes: number({
    min: 0.01,
    max: 10080,
    default: 1440,
    env: 'SVC_LOCKOUT_MAX_MINUTES',
    doc: 'no lockout lasts longer than this',
  }),
});

export const session = group({
  ttlHours: number({
    min: 0.01,
    max: 720,
    default: 12,
    env: 'SVC_SESSION_TTL_HOURS',
    doc: 'a console session ends this long after sign-in',
  }),
});
