import Joi from 'joi';
import ipaddr from 'ipaddr.js';
import {
  bool,
  envVariables,
  group,
  int,
  list,
  number,
  oneOf,
  string,
  type EnvVariable,
  type ValueOf,
} from './define.js';
import { gateway } from './gateway.js';
import { mcp } from './mcp.js';

/**
 * Every setting, declared once: its type, validation, default, environment variable and docs row
 * (define.ts). Loaded once (load.ts), validated, frozen and passed in; nothing else reads
 * process.env. docs/configuration.md's table is rendered from these declarations (docs.ts).
 */

export {
  AWS_ENV,
  MAX_CACHE_TTL_SECONDS,
  MAX_PER_MINUTE,
  PROVIDER_KINDS,
  rateLimitsSchema,
  type AwsCredentials,
  type ClassifierRule,
  type DataLossMode,
  type Enforcement,
  type GatewayDeployment,
  type GatewayModel,
  type GatewayProvider,
  type GatewaySettings,
  type PolicyProfile,
  type ProviderKind,
  type RateLimits,
  type ScopeLimits,
} from './gateway.js';
export type { LocalServerSettings } from './mcp.js';

/** A provider's signing secret; a refusal never quotes it (Joi's pattern message would). */
const signingSecret = (doc: string, env: string) =>
  string({
    min: 8,
    max: 256,
    joi: (s) =>
      s.pattern(/^\S+$/).messages({
        'string.pattern.base': '{{#label}} must be the secret as the provider shows it, without spaces',
      }),
    nullable: true,
    default: null,
    env,
    doc,
  });

/** A setting that lets a feature reach loopback and private addresses (tests and closed networks). */
const allowPrivate = (env: string, doc: string) => bool({ default: false, env, doc });

const server = group({
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

const load = group({
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

const webhooks = group({
  allowPrivateTargets: allowPrivate(
    'SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS',
    'outbound webhooks may go to loopback and private addresses (link-local never)',
  ),
  timeoutMs: int({
    min: 100,
    max: 60000,
    default: 10000,
    env: 'SVC_WEBHOOKS_TIMEOUT_MS',
    doc: 'a delivery that has not answered by then failed',
  }),
  backoffBaseMs: int({
    min: 10,
    default: 30000,
    env: 'SVC_WEBHOOKS_BACKOFF_BASE_MS',
    doc: "the first retry's wait; it doubles each time (±20% jitter), up to `backoffMaxMs`",
  }),
  backoffMaxMs: int({
    min: 10,
    default: 6 * 3_600_000,
    env: 'SVC_WEBHOOKS_BACKOFF_MAX_MS',
    doc: 'the longest wait between two tries',
  }),
  giveUpAfterMs: int({
    min: 10,
    default: 26 * 3_600_000,
    env: 'SVC_WEBHOOKS_GIVE_UP_AFTER_MS',
    doc: 'a delivery still failing this long after its event is given up, and its endpoint disabled',
  }),
  dispatchIntervalMs: int({
    min: 10,
    max: 60000,
    default: 1000,
    env: 'SVC_WEBHOOKS_DISPATCH_INTERVAL_MS',
    doc: 'how often the outbox is read for deliveries due',
  }),
});

const retention = group({
  days: int({
    min: 7,
    max: 36500,
    default: 90,
    env: 'SVC_RETENTION_DAYS',
    doc: 'operational records (gateway call records and tasks, webhook delivery logs, answers kept for inbound events) are swept this many days after they were made; at least 7 (providers retry for days); the ledger is never swept ([the store](operations.md#the-store))',
  }),
  sweepIntervalMs: int({
    min: 1000,
    max: 86_400_000,
    default: 300_000,
    env: 'SVC_RETENTION_SWEEP_INTERVAL_MS',
    doc: 'how often the background sweeper runs over every table with a window or a retention',
  }),
  sweepBatch: int({
    min: 1,
    max: 10_000,
    default: 500,
    doc: 'entries the sweeper reads per page and removes per write (a write never holds the lock long)',
  }),
  sweepMaxPerRun: int({
    min: 1,
    max: 10_000_000,
    default: 100_000,
    doc: 'entries of one table the sweeper reads in one run; a larger table is walked over several runs',
  }),
});

/** The OAuth authorization server (oauth/): Client ID Metadata Documents and refresh token rotation. */
const oauth = group({
  allowPrivateClientMetadata: allowPrivate(
    'SVC_OAUTH_ALLOW_PRIVATE_CLIENT_METADATA',
    'a `client_id` that is a URL ([Client ID Metadata Document](mcp-oauth.md#oauth-for-mcp-clients)) may be fetched from loopback and private addresses (link-local never); for tests and closed networks. `mcp.allowPrivateUpstreams` and `webhooks.allowPrivateTargets` do not open it',
  ),
  clientMetadataTimeoutMs: int({
    min: 100,
    max: 30000,
    default: 5000,
    env: 'SVC_OAUTH_CLIENT_METADATA_TIMEOUT_MS',
    doc: 'a Client ID Metadata Document not fully received by then is refused (connect, headers and body)',
  }),
  refreshGraceSeconds: int({
    min: 0,
    max: 60,
    default: 10,
    env: 'SVC_OAUTH_REFRESH_GRACE_SECONDS',
    doc: 'a used refresh token presented again by the same client within this window gets the same new pair (concurrent refreshes); later, reuse ends the connection. `0`: no window',
  }),
  deviceCodeTtlSeconds: int({
    min: 1,
    max: 3600,
    default: 600,
    env: 'SVC_OAUTH_DEVICE_CODE_TTL_SECONDS',
    doc: '`svc login`: how long a code waits for a person to approve it ([Signing in](cli.md#signing-in-svc-login))',
  }),
  devicePollIntervalSeconds: int({
    min: 1,
    max: 60,
    default: 5,
    env: 'SVC_OAUTH_DEVICE_POLL_INTERVAL_SECONDS',
    doc: '`svc login`: the least time between two polls of the token endpoint; a faster poll gets `slow_down` and the interval grows by 5 s',
  }),
  personAccessTtlSeconds: int({
    min: 1,
    max: 86400,
    default: 3600,
    env: 'SVC_OAUTH_PERSON_ACCESS_TTL_SECONDS',
    doc: "`svc login`: a person's command-line access token (`pat_`) lasts this long; the CLI refreshes it",
  }),
  personRefreshTtlDays: int({
    min: 1,
    max: 90,
    default: 30,
    env: 'SVC_OAUTH_PERSON_REFRESH_TTL_DAYS',
    doc: "`svc login`: a person's refresh token (`prt_`) unused this long expires; then `svc login` again",
  }),
});

/** A free plan's allowance; null: unlimited. */
const allowance = (min: number, env: string, doc: string) =>
  int({ min, nullable: true, default: null, env, shown: 'unlimited (`null`)', doc });

const plan = group({
  agents: allowance(
    0,
    'SVC_PLAN_AGENTS',
    "the free plan's live agents per workspace; past it `402 plan_limit_reached` (a workspace on a paid plan from billing is held to none of the `plan.*` allowances)",
  ),
  mandateRules: allowance(
    0,
    'SVC_PLAN_MANDATE_RULES',
    "the free plan's mandate rules per workspace, over all its agents; past it `402 plan_limit_reached`",
  ),
  monthlyRequests: allowance(
    0,
    'SVC_PLAN_MONTHLY_REQUESTS',
    'model requests per workspace per calendar month (UTC); past it `429 plan_limit_reached`',
  ),
  people: allowance(
    1,
    'SVC_PLAN_PEOPLE',
    'people per workspace on a free plan; past it, after the grace period, model calls get `402 seat_limit_reached`',
  ),
  seatGraceDays: number({
    min: 0,
    max: 365,
    default: 7,
    env: 'SVC_PLAN_SEAT_GRACE_DAYS',
    doc: 'how long a workspace may stay past `plan.people`',
  }),
});

/** GET /metrics and OpenTelemetry traces (observability/): both off unless configured. */
const observability = group({
  metricsToken: string({
    min: 16,
    max: 256,
    joi: (s) =>
      s
        .pattern(/^[\x21-\x7e]+$/)
        .messages({ 'string.pattern.base': '{{#label}} must be printable ASCII without spaces' }),
    nullable: true,
    default: null,
    env: 'SVC_METRICS_TOKEN',
    doc: 'the bearer token GET /metrics requires (16 to 256 printable characters); unset (and no `metricsPort`), the route does not exist',
  }),
  metricsPort: int({
    min: 0,
    max: 65535,
    nullable: true,
    default: null,
    env: 'SVC_METRICS_PORT',
    flag: '--metrics-port',
    doc: 'GET /metrics without a token on a separate listener bound to 127.0.0.1 at this port',
  }),
  otlpEndpoint: string({
    joi: (s) => s.uri({ scheme: ['http', 'https'] }),
    nullable: true,
    default: null,
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    doc: 'OTLP/HTTP base address: traces are sent to `<it>/v1/traces`; unset (and no `otlpTracesEndpoint`), no trace is kept or sent',
  }),
  otlpTracesEndpoint: string({
    joi: (s) => s.uri({ scheme: ['http', 'https'] }),
    nullable: true,
    default: null,
    env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    doc: 'OTLP/HTTP traces address used as it is (over `otlpEndpoint`)',
  }),
  serviceName: string({
    min: 1,
    max: 128,
    default: 'svc',
    env: 'OTEL_SERVICE_NAME',
    doc: '`service.name` of the traces',
  }),
});

/** The declarations, by key, in the order the docs list them. */
export const declarations = {
  env: oneOf(['development', 'production'], {
    default: 'development',
    env: 'NODE_ENV',
    doc: '`production`: `__Host-sid` cookie with `Secure`, https `baseUrl` required, generic 500 messages',
  }),
  dataDir: string({
    min: 1,
    default: './data',
    env: 'SVC_DATA_DIR',
    flag: '--data-dir',
    doc: 'where `svc.mdb` (the LMDB store) and `master.key` live',
  }),
  /**
   * The store (docs/operations.md#store-backends): null or 'lmdb:' is the LMDB file under dataDir;
   * postgres://… is PostgreSQL.
   */
  storeUrl: string({
    joi: (s) =>
      s
        .trim()
        .pattern(/^(lmdb:|postgres(ql)?:\/\/.+)$/i, 'lmdb: or postgres://user:password@host:port/database')
        // Never echoes the value: a store URL may hold a password.
        .messages({
          'string.pattern.name':
            '{{#label}} must be lmdb: or postgres://user:password@host:port/database (the value given is not shown: it may hold a password)',
        }),
    nullable: true,
    default: null,
    env: 'SVC_STORE_URL',
    flag: '--store',
    shown: 'none (LMDB)',
    doc: 'the store: `lmdb:` (the file under `dataDir`) or `postgres://user:password@host:port/database` (or `postgresql://`), for several instances on one database; see [Past one machine](operations.md#past-one-machine). Never echoed in errors or logs',
  }),
  baseUrl: string({
    joi: (s) => s.uri({ scheme: ['http', 'https'] }).pattern(/[^/]$/, 'no trailing slash'),
    nullable: true,
    default: null,
    env: 'SVC_BASE_URL',
    shown: 'the bound address (`http://host:port`)',
    doc: 'public address of this deployment, without a trailing slash: docs links, Origin checks, receipts',
  }),
  masterKey: string({
    joi: (s) => s.base64({ paddingRequired: false, urlSafe: true }),
    nullable: true,
    default: null,
    env: 'SVC_MASTER_KEY',
    shown: '`master.key` file, created 0600 with a new store',
    doc: 'base64url of 32 random bytes; seals secrets at rest. The store keeps a check value of it (never the key): another key is refused, exit 3',
  }),
  masterKeyFile: string({
    min: 1,
    nullable: true,
    default: null,
    env: 'SVC_MASTER_KEY_FILE',
    doc: "a file holding the master key (a mounted secret, or a backup's `master.key`); read, never written. Not together with `SVC_MASTER_KEY`",
  }),
  server,
  limits: group({
    bodyBytes: int({
      min: 1024,
      default: 1048576,
      env: 'SVC_BODY_LIMIT_BYTES',
      doc: 'request body limit for most routes (`413 body_too_large`; see [Body limits](operations.md#body-limits))',
    }),
  }),
  load,
  rateLimits: group({
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
  }),
  /** Per-account lockouts (people/lockouts.ts): wrong current passwords and wrong two-factor codes. */
  lockout: group({
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
  }),
  receipts: group({
    ttlDays: int({
      min: 1,
      max: 3650,
      default: 90,
      env: 'SVC_RECEIPT_TTL_DAYS',
      doc: "a receipt's `exp` after its `iat`",
    }),
  }),
  approvals: group({
    ttlHours: number({
      min: 0.0001,
      max: 720,
      default: 24,
      env: 'SVC_APPROVAL_TTL_HOURS',
      doc: 'a waiting approval expires this long after the action asked (its action is then denied)',
    }),
  }),
  killSwitch: group({
    bulkFreezeCeiling: int({
      min: 1,
      default: 25,
      env: 'SVC_BULK_FREEZE_CEILING',
      doc: 'a token freezing more agents than this at once waits for a person (`202`)',
    }),
  }),
  webhooks,
  ledger: group({
    checkpointIntervalMs: int({
      min: 100,
      max: 60000,
      default: 1000,
      env: 'SVC_LEDGER_CHECKPOINT_INTERVAL_MS',
      doc: 'the server signs a ledger checkpoint this often when records were added (and every 1,000 records)',
    }),
  }),
  retention,
  mcp,
  oauth,
  plan,
  /** The operator's own billing (plans/service.ts): only events signed with these secrets change a plan. */
  billing: group({
    stripeSigningSecret: signingSecret(
      "the operator's Stripe billing endpoint secret: only billing events (`customer.subscription.*`, `invoice.payment_failed`) signed with it change a workspace's plan; unset, no plan is lifted",
      'SVC_BILLING_STRIPE_SIGNING_SECRET',
    ),
    stripePreviousSigningSecret: signingSecret(
      'during a rotation of the secret above, the one before it (also accepted); unset it once Stripe signs with the new one only',
      'SVC_BILLING_STRIPE_PREVIOUS_SIGNING_SECRET',
    ),
  }),
  session: group({
    ttlHours: number({
      min: 0.01,
      max: 720,
      default: 12,
      env: 'SVC_SESSION_TTL_HOURS',
      doc: 'a console session ends this long after sign-in',
    }),
  }),
  log: group({
    level: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      default: 'info',
      env: 'SVC_LOG_LEVEL',
      doc: 'pino level; logs go to stderr',
    }),
    format: oneOf(['auto', 'json', 'pretty'], {
      default: 'auto',
      env: 'SVC_LOG_FORMAT',
      doc: '`auto`: readable lines (`2026-11-24 05:12:09.120 INFO: listening {"address":…}`) when `svc serve` runs on a terminal, JSON lines with ISO 8601 UTC times (`"time":"2026-11-24T05:12:09.120Z"`) everywhere else (a pipe, a file, systemd, Docker); `json` or `pretty` force one',
    }),
  }),
  observability,
  gateway,
};

export type Settings = { [K in keyof typeof declarations]: ValueOf<(typeof declarations)[K]> };

/** The one schema a configuration is validated with (unknown keys refused, every problem listed). */
export const settingsSchema = Joi.object<Settings>(
  Object.fromEntries(Object.entries(declarations).map(([key, setting]) => [key, setting.schema])),
).options({ abortEarly: false, convert: true });

/** Environment variables and the setting each one sets (flags win over these, these over files). */
export const environment: readonly EnvVariable[] = envVariables(declarations);
