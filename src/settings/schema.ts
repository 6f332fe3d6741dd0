import Joi from 'joi';
import ipaddr from 'ipaddr.js';

/**
 * Every setting, with its default and a description. Loaded once (see load.ts), validated,
 * frozen and passed in; nothing else reads process.env.
 */

/** Provider kinds: `openai` is also the catch-all for any OpenAI-compatible vendor. */
export type ProviderKind = 'openai' | 'anthropic' | 'azure-openai' | 'gemini' | 'bedrock';

/** AWS credentials for a bedrock provider, from the standard AWS environment variables. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface GatewayProvider {
  id: string;
  kind: ProviderKind;
  /** Always set once loaded (a bedrock provider without one gets its region's endpoint). */
  baseUrl: string;
  /** azure-openai: the `api-version` query parameter. */
  apiVersion?: string;
  /** bedrock: the AWS region the requests are signed for. */
  region?: string;
  /** bedrock: read from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN at load; null if unset. */
  aws?: AwsCredentials | null;
  apiKeyEnv?: string;
  /** The secret read from `apiKeyEnv` at load (never logged, never in a config file); null if unset. */
  apiKey: string | null;
  /** Concurrent connections kept to this upstream. */
  connections: number;
  /** openai kind: the vendor serves POST /responses, so /v1/responses passes through (and may keep state). */
  responses?: boolean;
}

/**
 * One place a catalogue model is served from (docs/gateway.md#deployments-and-retries): traffic
 * spreads over them by weight.
 */
export interface GatewayDeployment {
  provider: string;
  upstreamModel: string;
  weight: number;
}

export interface GatewayModel {
  id: string;
  /** The first deployment's provider and upstream model (routing, policy and headers name them). */
  provider: string;
  upstreamModel: string;
  /** Always at least one: settings/load.ts fills it from `provider` and `upstreamModel` when not given. */
  deployments: GatewayDeployment[];
  priceMicrosPerMTokIn: number;
  priceMicrosPerMTokOut: number;
  /** Prompt tokens read from the vendor's cache; unset: priceMicrosPerMTokIn (gateway/steps/prices.ts). */
  priceMicrosPerMTokCacheRead?: number;
  /** Prompt tokens written to the vendor's cache (five minutes); unset: 1.25 x priceMicrosPerMTokIn. */
  priceMicrosPerMTokCacheWrite?: number;
  /** Prompt tokens written to the vendor's cache for one hour; unset: 2 x priceMicrosPerMTokIn. */
  priceMicrosPerMTokCacheWrite1h?: number;
  quality: number;
  latency: number;
  jurisdiction: { domicile: string; region: string };
  taskClasses: string[];
}

export type Enforcement = 'enforce' | 'shadow';
export type DataLossMode = 'off' | 'redact' | 'block';

/** Restrictions a key's policy profile puts on routing (every list: absent means any). */
export interface PolicyProfile {
  id: string;
  models?: string[];
  providers?: string[];
  domiciles?: string[];
  regions?: string[];
  enforcement?: Enforcement;
  /** Who signs off a relaxation of this profile (named in 409 policy_conflict). */
  signOff: string;
  /** Requests and tokens per minute for the traffic of the profile's keys, per workspace (gateway/limits.ts). */
  limits?: RateLimits;
  /** Turns the response cache on for the profile's keys (gateway/cache.ts). */
  cache?: { ttlSeconds: number };
  /**
   * A vendor's context-window refusal (the prompt is too long) moves to these models, by the model
   * refused (`*`: any), as LiteLLM's `context_window_fallbacks` (gateway/failover.ts).
   */
  contextWindowFallbacks?: Record<string, string[]>;
  /** A vendor's content-policy refusal moves to these models, by the model refused (`*`: any). */
  contentPolicyFallbacks?: Record<string, string[]>;
}

/** Requests and tokens per minute (docs/gateway.md#rate-limits); absent: no limit. */
export interface RateLimits {
  requestsPerMinute?: number;
  tokensPerMinute?: number;
}

/** A team's or principal's limits (`gateway.limits`), in every workspace that has it. */
export interface ScopeLimits extends RateLimits {
  scope: { kind: 'team' | 'principal'; id: string };
}

export interface ClassifierRule {
  taskClass: string;
  /** Lower-case words or phrases; the first rule with a match names the class. */
  keywords: string[];
}

export interface GatewaySettings {
  enforcement: Enforcement;
  providers: GatewayProvider[];
  models: GatewayModel[];
  policyProfiles: PolicyProfile[];
  /** Task classes that need `x-svc-human-oversight: acknowledged`. */
  highRiskTaskClasses: string[];
  classifier: { rules: ClassifierRule[]; fallback: string };
  /** The deployment's own jurisdiction, for `x-svc-objective: sovereign`. */
  home: { domicile: string; region: string | null };
  dataLoss: DataLossMode;
  bodyBytes: number;
  connectTimeoutMs: number;
  /** Until the first byte of the upstream's answer. */
  headersTimeoutMs: number;
  /** Between two chunks of the upstream's body. */
  bodyTimeoutMs: number;
  breaker: { failures: number; cooldownMs: number };
  limits: ScopeLimits[];
  /** How long past its start a request may wait on a vendor's named wait or back off from throttling (gateway/failover.ts). */
  retry: { deadlineMs: number };
}

/** A stdio MCP server declared in the config file (issue 34 part 5); never named by the API. */
export interface LocalServerSettings {
  /** Its name among a workspace's MCP servers. */
  id: string;
  /** An absolute path, or a name looked up on PATH at start. */
  command: string;
  args: string[];
  /** Names of the environment variables passed to it; nothing else of svc's environment is. */
  env: string[];
  sandbox: 'none' | 'bwrap';
  /** bwrap only: the process keeps the network (otherwise it has none). */
  network: boolean;
  /** The workspaces it appears in; null: all. */
  workspaces: string[] | null;
  /** Address space of one process (RLIMIT_AS, through prlimit). */
  memoryMb: number;
  /** Processes of this server running at once, over all sessions and workspaces. */
  maxProcesses: number;
  /** The values of `env`, read from svc's environment at load (an unset name is left out). */
  envValues: Record<string, string>;
  /** svc's PATH at load, where a command named without a folder is looked up. */
  searchPath: string;
}

export interface Settings {
  env: 'development' | 'production';
  dataDir: string;
  /**
   * The store (docs/operations.md#store-backends): null or 'lmdb:' is the LMDB file under dataDir;
   * postgres://… is PostgreSQL.
   */
  storeUrl: string | null;
  baseUrl: string;
  masterKey: string | null;
  masterKeyFile: string | null;
  server: {
    host: string;
    port: number;
    /** Processes serving one port over one store (Node's cluster module); 1 is no cluster. */
    workers: number;
    headersTimeoutMs: number;
    requestTimeoutMs: number;
    connectionsCheckingIntervalMs: number;
    shutdownTimeoutMs: number;
    trustedProxies: string[];
  };
  limits: { bodyBytes: number };
  load: {
    sampleIntervalMs: number;
    maxEventLoopDelayMs: number;
    maxHeapUsedBytes: number;
    maxRssBytes: number;
    retryAfterSeconds: number;
  };
  rateLimits: { publicPerMinute: number; signInPerMinute: number; gatePerMinute: number };
  /** Per-account lockouts (people/lockouts.ts): wrong current passwords and wrong two-factor codes. */
  lockout: { maxFailures: number; minutes: number; maxMinutes: number };
  receipts: { ttlDays: number };
  approvals: { ttlHours: number };
  killSwitch: { bulkFreezeCeiling: number };
  webhooks: {
    allowPrivateTargets: boolean;
    timeoutMs: number;
    backoffBaseMs: number;
    backoffMaxMs: number;
    giveUpAfterMs: number;
    dispatchIntervalMs: number;
  };
  ledger: { checkpointIntervalMs: number; public: boolean };
  retention: { days: number; sweepIntervalMs: number; sweepBatch: number; sweepMaxPerRun: number };
  mcp: {
    allowPrivateUpstreams: boolean;
    // The upstream sessions' deadlines and caps.
    upstreamTimeoutMs: number;
    upstreamCallTimeoutMs: number;
    upstreamSessionsPerAgent: number;
    upstreamSessionsPerServer: number;
    upstreamIdleMs: number;
    /** Web origins (scheme://host[:port]) whose pages may call /mcp (CORS); none by default. */
    allowedOrigins: string[];
    /** Stdio MCP servers svc runs itself, one process per upstream session (mcp/local-servers.ts). */
    localServers: LocalServerSettings[];
  };
  /** The OAuth authorization server (oauth/): Client ID Metadata Documents and refresh token rotation. */
  oauth: {
    allowPrivateClientMetadata: boolean;
    clientMetadataTimeoutMs: number;
    refreshGraceSeconds: number;
    deviceCodeTtlSeconds: number;
    devicePollIntervalSeconds: number;
    personAccessTtlSeconds: number;
    personRefreshTtlDays: number;
  };
  plan: {
    agents: number | null;
    mandateRules: number | null;
    monthlyRequests: number | null;
    people: number | null;
    seatGraceDays: number;
  };
  /** The operator's own billing (plans/service.ts): only events signed with these secrets change a plan. */
  billing: { stripeSigningSecret: string | null; stripePreviousSigningSecret: string | null };
  session: { ttlHours: number };
  log: {
    level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
    format: 'auto' | 'json' | 'pretty';
  };
  /** GET /metrics and OpenTelemetry traces (observability/): both off unless configured. */
  observability: {
    metricsToken: string | null;
    metricsPort: number | null;
    otlpEndpoint: string | null;
    otlpTracesEndpoint: string | null;
    serviceName: string;
  };
  gateway: GatewaySettings;
}

/** A provider's signing secret; a refusal never quotes it (Joi's pattern message would). */
const signingSecret = Joi.string()
  .min(8)
  .max(256)
  .pattern(/^\S+$/)
  .messages({ 'string.pattern.base': '{{#label}} must be the secret as the provider shows it, without spaces' });

/** The most requests or tokens per minute a limit may name. */
export const MAX_PER_MINUTE = 1_000_000_000;
/** The longest a cached answer may be kept (30 days). */
export const MAX_CACHE_TTL_SECONDS = 30 * 86_400;

/** A profile's fallbacks: the model refused (or `*`) to the models tried next, in order. */
const fallbacksSchema = Joi.object()
  .pattern(Joi.string().max(128), Joi.array().items(Joi.string().max(128)).min(1).max(32).unique())
  .max(256);

/**
 * `limits: { requestsPerMinute?, tokensPerMinute? }` (docs/gateway.md#rate-limits): keys, policy
 * profiles, teams and principals.
 */
export const rateLimitsSchema = Joi.object({
  requestsPerMinute: Joi.number().integer().min(1).max(MAX_PER_MINUTE),
  tokensPerMinute: Joi.number().integer().min(1).max(MAX_PER_MINUTE),
});

export const settingsSchema = Joi.object<Settings>({
  env: Joi.string()
    .valid('development', 'production')
    .default('development')
    .description('production: __Host-sid cookie, https base URL required, generic 500 messages'),
  dataDir: Joi.string().min(1).default('./data').description('where the LMDB store and the master key file live'),
  storeUrl: Joi.string()
    .trim()
    .pattern(/^(lmdb:|postgres(ql)?:\/\/.+)$/i, 'lmdb: or postgres://user:password@host:port/database')
    // Never echoes the value: a store URL may hold a password.
    .messages({
      'string.pattern.name':
        '{{#label}} must be lmdb: or postgres://user:password@host:port/database (the value given is not shown: it may hold a password)',
    })
    .allow(null)
    .default(null)
    .description(
      'the store: absent or lmdb: is the LMDB file under dataDir; postgres://user:password@host:port/database (or postgresql://) is PostgreSQL, for several instances on one database',
    ),
  baseUrl: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .pattern(/[^/]$/, 'no trailing slash')
    .allow(null)
    .default(null)
    .description(
      'public address of this deployment, used in docs links, receipts and Origin checks; default http://host:port as bound',
    ),
  masterKey: Joi.string()
    .base64({ paddingRequired: false, urlSafe: true })
    .allow(null)
    .default(null)
    .description(
      'base64url of 32 random bytes; encrypts secrets at rest. Default: a key file created beside the store',
    ),
  masterKeyFile: Joi.string()
    .min(1)
    .allow(null)
    .default(null)
    .description(
      'a file holding the master key (a mounted secret, or a master.key copied from a backup); read, never written',
    ),
  server: Joi.object({
    host: Joi.string().hostname().default('127.0.0.1').description('address to bind'),
    port: Joi.number().integer().min(0).max(65535).default(8080).description('port to bind; 0 picks a free one'),
    workers: Joi.number()
      .integer()
      .min(1)
      .max(64)
      .default(1)
      .description('processes serving the one port over the one store (svc serve --workers); 1 runs no cluster'),
    headersTimeoutMs: Joi.number()
      .integer()
      .min(100)
      .default(2000)
      .description('a client must send its headers within this time (slow-loris guard)'),
    requestTimeoutMs: Joi.number()
      .integer()
      .min(100)
      .default(10000)
      .description('a client must send its whole request within this time'),
    connectionsCheckingIntervalMs: Joi.number()
      .integer()
      .min(100)
      .default(1000)
      .description('how often Node checks the two timeouts above'),
    shutdownTimeoutMs: Joi.number()
      .integer()
      .min(0)
      .default(10000)
      .description('how long in-flight requests may run after SIGTERM'),
    trustedProxies: Joi.array()
      .items(
        Joi.string()
          .custom((value: string) => {
            if (value.includes('/')) ipaddr.parseCIDR(value);
            else if (!ipaddr.isValid(value)) throw new Error('not an address');
            return value;
          })
          .messages({ 'any.custom': '{{#label}} must be an address or a CIDR range' }),
      )
      .default([])
      .description(
        'CIDR ranges of reverse proxies whose x-forwarded-for is believed; empty: the socket address is the client',
      ),
  }).default(),
  limits: Joi.object({
    bodyBytes: Joi.number().integer().min(1024).default(1048576).description('request body limit for most routes'),
  }).default(),
  load: Joi.object({
    sampleIntervalMs: Joi.number().integer().min(0).default(1000).description('0 turns load shedding off'),
    maxEventLoopDelayMs: Joi.number()
      .integer()
      .min(0)
      .default(1000)
      .description('shed load above this event-loop delay; 0: no limit'),
    maxHeapUsedBytes: Joi.number()
      .integer()
      .min(0)
      .default(0)
      .description('shed load above this heap use; 0: no limit'),
    maxRssBytes: Joi.number()
      .integer()
      .min(0)
      .default(0)
      .description('shed load above this resident size; 0: no limit'),
    retryAfterSeconds: Joi.number()
      .integer()
      .min(1)
      .default(5)
      .description('retry-after sent with 503 overloaded and 503 store_unavailable'),
  }).default(),
  rateLimits: Joi.object({
    publicPerMinute: Joi.number()
      .integer()
      .min(1)
      .default(120)
      .description('requests per client address per minute on public routes'),
    signInPerMinute: Joi.number()
      .integer()
      .min(1)
      .default(10)
      .description('sign-in attempts per client address per minute'),
    gatePerMinute: Joi.number()
      .integer()
      .min(1)
      .default(600)
      .description('gate requests per agent per minute (ratelimit-* headers)'),
  }).default(),
  lockout: Joi.object({
    maxFailures: Joi.number()
      .integer()
      .min(1)
      .max(100)
      .default(5)
      .description(
        'wrong attempts in a row at an account (current password on a change; two-factor codes) before it is locked for that kind',
      ),
    minutes: Joi.number()
      .min(0.01)
      .max(1440)
      .default(15)
      .description('the first lockout lasts this long; each further one in a row twice as long'),
    maxMinutes: Joi.number().min(0.01).max(10080).default(1440).description('no lockout lasts longer than this'),
  }).default(),
  receipts: Joi.object({
    ttlDays: Joi.number()
      .integer()
      .min(1)
      .max(3650)
      .default(90)
      .description('a receipt expires this many days after it was signed'),
  }).default(),
  approvals: Joi.object({
    ttlHours: Joi.number()
      .min(0.0001)
      .max(720)
      .default(24)
      .description('a waiting approval expires this long after the action asked (its action is then denied)'),
  }).default(),
  killSwitch: Joi.object({
    bulkFreezeCeiling: Joi.number()
      .integer()
      .min(1)
      .default(25)
      .description('a token freezing more agents than this at once waits for a person (202 pending)'),
  }).default(),
  webhooks: Joi.object({
    allowPrivateTargets: Joi.boolean()
      .truthy('1')
      .falsy('0')
      .default(false)
      .description('outbound webhooks may go to loopback and private addresses (link-local never)'),
    timeoutMs: Joi.number()
      .integer()
      .min(100)
      .max(60000)
      .default(10000)
      .description('a delivery that has not answered by then failed'),
    backoffBaseMs: Joi.number()
      .integer()
      .min(10)
      .default(30000)
      .description('the wait before the first retry; it doubles each time (with jitter)'),
    backoffMaxMs: Joi.number()
      .integer()
      .min(10)
      .default(6 * 3_600_000)
      .description('the longest wait between two tries'),
    giveUpAfterMs: Joi.number()
      .integer()
      .min(10)
      .default(26 * 3_600_000)
      .description('a delivery still failing this long after its event is given up, and its endpoint disabled'),
    dispatchIntervalMs: Joi.number()
      .integer()
      .min(10)
      .max(60000)
      .default(1000)
      .description('how often the outbox is looked at for deliveries due'),
  }).default(),
  ledger: Joi.object({
    checkpointIntervalMs: Joi.number()
      .integer()
      .min(100)
      .max(60000)
      .default(1000)
      .description('the server signs a ledger checkpoint this often when records were added (and every 1,000 records)'),
    public: Joi.boolean()
      .truthy('1')
      .falsy('0')
      .default(false)
      .description(
        "anyone may read each workspace ledger's checkpoint, tiles and entry bundles under /v1/ledger/{workspaceId}/ (otherwise evidence:read)",
      ),
  }).default(),
  retention: Joi.object({
    days: Joi.number()
      .integer()
      .min(7)
      .max(36500)
      .default(90)
      .description(
        'operational records (gateway call records and tasks, webhook delivery logs, answers kept for inbound events) are swept this many days after they were made; the ledger is never swept',
      ),
    sweepIntervalMs: Joi.number()
      .integer()
      .min(1000)
      .max(86_400_000)
      .default(300_000)
      .description('how often the background sweeper runs over every table with a window or a retention'),
    sweepBatch: Joi.number()
      .integer()
      .min(1)
      .max(10_000)
      .default(500)
      .description('entries the sweeper reads per page and removes per write (a write never holds the lock long)'),
    sweepMaxPerRun: Joi.number()
      .integer()
      .min(1)
      .max(10_000_000)
      .default(100_000)
      .description('entries of one table the sweeper reads in one run; a larger table is walked over several runs'),
  }).default(),
  mcp: Joi.object({
    allowPrivateUpstreams: Joi.boolean()
      .truthy('1')
      .falsy('0')
      .default(false)
      .description('the MCP proxy may reach upstream servers on loopback and private addresses (link-local never)'),
    // The upstream sessions' deadlines and caps.
    upstreamTimeoutMs: Joi.number()
      .integer()
      .min(100)
      .max(120_000)
      .default(5_000)
      .description(
        'deadline of an upstream MCP server opening a session, listing its tools, and answering when it is added',
      ),
    upstreamCallTimeoutMs: Joi.number()
      .integer()
      .min(100)
      .max(3_600_000)
      .default(60_000)
      .description(
        'deadline of one proxied tool call (counted again from each progress); past it the upstream is sent notifications/cancelled',
      ),
    upstreamSessionsPerAgent: Joi.number()
      .integer()
      .min(1)
      .max(100_000)
      .default(64)
      .description('upstream MCP sessions one agent may have open at once, over all its sessions and upstreams'),
    upstreamSessionsPerServer: Joi.number()
      .integer()
      .min(1)
      .max(1_000_000)
      .default(1_000)
      .description('upstream MCP sessions open at once to one upstream server, over all agents'),
    upstreamIdleMs: Joi.number()
      .integer()
      .min(100)
      .max(86_400_000)
      .default(300_000)
      .description("an agent's upstream MCP session used without a session of its own ends after this long unused"),
    allowedOrigins: Joi.array()
      .items(
        Joi.string()
          .custom((value: string) => {
            const url = new URL(value);
            if (url.origin !== value || url.origin === 'null') throw new Error('not an origin');
            return value;
          })
          .messages({ 'any.custom': '{{#label}} must be an origin: scheme://host[:port], nothing after it' }),
      )
      .default([])
      .description('web origins whose pages may call /mcp (CORS), exactly as a browser sends them'),
    localServers: Joi.array()
      .items(
        Joi.object({
          id: Joi.string()
            .pattern(/^[A-Za-z0-9_-]{1,64}$/)
            .required()
            .description("its name among the workspace's MCP servers"),
          command: Joi.string()
            .min(1)
            .max(4096)
            .required()
            .description('an absolute path, or a name looked up on PATH at start'),
          args: Joi.array().items(Joi.string().max(4096)).max(256).default([]),
          env: Joi.array()
            .items(Joi.string().pattern(/^[A-Za-z_][A-Za-z0-9_]*$/))
            .max(256)
            .default([])
            .description("names of the environment variables passed (values read from svc's environment)"),
          sandbox: Joi.string().valid('none', 'bwrap').default('none'),
          network: Joi.boolean().default(false).description('bwrap only: the process keeps the network'),
          workspaces: Joi.array().items(Joi.string().max(128)).min(1).allow(null).default(null),
          memoryMb: Joi.number().integer().min(64).max(1_048_576).default(2048),
          maxProcesses: Joi.number().integer().min(1).max(10_000).default(16),
          envValues: Joi.any().forbidden().messages({
            'any.unknown': '{{#label}} may not be in a config file: name the variables in env',
          }),
          searchPath: Joi.any().forbidden(),
        }),
      )
      .unique('id')
      .max(256)
      .default([])
      .description('stdio MCP servers svc runs itself, one process per upstream session'),
  }).default(),
  oauth: Joi.object({
    allowPrivateClientMetadata: Joi.boolean()
      .truthy('1')
      .falsy('0')
      .default(false)
      .description(
        'a client_id that is a URL (Client ID Metadata Document) may be fetched from loopback and private addresses (link-local never); for tests and closed networks',
      ),
    clientMetadataTimeoutMs: Joi.number()
      .integer()
      .min(100)
      .max(30000)
      .default(5000)
      .description('a Client ID Metadata Document not fully received by then is refused (connect, headers and body)'),
    refreshGraceSeconds: Joi.number()
      .integer()
      .min(0)
      .max(60)
      .default(10)
      .description(
        'a refresh token presented again this long after its first use, by the same client, gets the same new pair (concurrent refreshes); later, reuse ends the connection. 0: no grace',
      ),
    deviceCodeTtlSeconds: Joi.number()
      .integer()
      .min(1)
      .max(3600)
      .default(600)
      .description('svc login: how long a user code waits for a person to approve it'),
    devicePollIntervalSeconds: Joi.number()
      .integer()
      .min(1)
      .max(60)
      .default(5)
      .description('svc login: the least time between two polls of the token endpoint (faster polls get slow_down)'),
    personAccessTtlSeconds: Joi.number()
      .integer()
      .min(1)
      .max(86400)
      .default(3600)
      .description("svc login: how long a person's command-line access token lasts before the CLI refreshes it"),
    personRefreshTtlDays: Joi.number()
      .integer()
      .min(1)
      .max(90)
      .default(30)
      .description("svc login: how long a person's command-line refresh token lasts unused; then svc login again"),
  }).default(),
  plan: Joi.object({
    agents: Joi.number()
      .integer()
      .min(0)
      .allow(null)
      .default(null)
      .description('live agents per workspace; null: unlimited'),
    mandateRules: Joi.number()
      .integer()
      .min(0)
      .allow(null)
      .default(null)
      .description('mandate rules per workspace, over all its agents; null: unlimited'),
    monthlyRequests: Joi.number()
      .integer()
      .min(0)
      .allow(null)
      .default(null)
      .description('model requests per workspace per calendar month (UTC); null: unlimited'),
    people: Joi.number()
      .integer()
      .min(1)
      .allow(null)
      .default(null)
      .description(
        'people per workspace on a free plan; past it, after the grace period, model calls get 402 seat_limit_reached; null: unlimited',
      ),
    seatGraceDays: Joi.number()
      .min(0)
      .max(365)
      .default(7)
      .description('how long a workspace may stay past plan.people'),
  }).default(),
  billing: Joi.object({
    stripeSigningSecret: signingSecret
      .allow(null)
      .default(null)
      .description(
        "the signing secret of the operator's own Stripe webhook endpoint: only billing events (customer.subscription.*, invoice.payment_failed) signed with it change a workspace's plan; null: no plan is ever lifted",
      ),
    stripePreviousSigningSecret: signingSecret
      .allow(null)
      .default(null)
      .description(
        'during a rotation of the secret above, the one before it (also accepted); unset it once Stripe signs with the new one only',
      ),
  }).default(),
  session: Joi.object({
    ttlHours: Joi.number().min(0.01).max(720).default(12).description('a console session ends this long after sign-in'),
  }).default(),
  log: Joi.object({
    level: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').default('info'),
    format: Joi.string()
      .valid('auto', 'json', 'pretty')
      .default('auto')
      .description('auto: readable lines when svc serve runs on a terminal, JSON lines otherwise'),
  }).default(),
  observability: Joi.object({
    metricsToken: Joi.string()
      .min(16)
      .max(256)
      .pattern(/^[\x21-\x7e]+$/)
      .allow(null)
      .default(null)
      .messages({ 'string.pattern.base': '{{#label}} must be printable ASCII without spaces' })
      .description('bearer token that GET /metrics requires; unset (and no metricsPort): /metrics is off'),
    metricsPort: Joi.number()
      .integer()
      .min(0)
      .max(65535)
      .allow(null)
      .default(null)
      .description('serve GET /metrics without a token on a separate listener bound to 127.0.0.1 at this port'),
    otlpEndpoint: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .allow(null)
      .default(null)
      .description('OTLP/HTTP base address: traces are sent to <it>/v1/traces; unset: no trace is kept or sent'),
    otlpTracesEndpoint: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .allow(null)
      .default(null)
      .description('OTLP/HTTP traces address used as it is (over otlpEndpoint)'),
    serviceName: Joi.string().min(1).max(128).default('svc').description('service.name on every span'),
  }).default(),
  gateway: Joi.object({
    enforcement: Joi.string()
      .valid('enforce', 'shadow')
      .default('shadow')
      .description('shadow: serve the requested model and say where routing would go; enforce: route'),
    providers: Joi.array()
      .items(
        Joi.object({
          id: Joi.string()
            .pattern(/^[A-Za-z0-9._-]+$/)
            .max(64)
            .required(),
          kind: Joi.string().valid('openai', 'anthropic', 'azure-openai', 'gemini', 'bedrock').required(),
          baseUrl: Joi.string()
            .uri({ scheme: ['http', 'https'] })
            .when('kind', { is: 'bedrock', then: Joi.optional(), otherwise: Joi.required() })
            .description(
              "openai: ends before /chat/completions; anthropic: ends before /v1/messages; azure-openai: the resource endpoint; gemini: ends before /v1beta; bedrock: optional (the region's endpoint)",
            ),
          apiVersion: Joi.string()
            .pattern(/^[A-Za-z0-9._-]+$/)
            .when('kind', { is: 'azure-openai', then: Joi.required(), otherwise: Joi.forbidden() })
            .description('azure-openai: the api-version query parameter'),
          region: Joi.string()
            .pattern(/^[a-z0-9-]+$/)
            .when('kind', { is: 'bedrock', then: Joi.required(), otherwise: Joi.forbidden() })
            .description('bedrock: the AWS region (credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)'),
          apiKeyEnv: Joi.string()
            .pattern(/^[A-Z_][A-Z0-9_]*$/)
            .description('the environment variable holding the upstream secret'),
          apiKey: Joi.any().forbidden().messages({
            'any.unknown':
              '{{#label}} may not be in a config file: name the environment variable that holds the secret in apiKeyEnv',
          }),
          connections: Joi.number().integer().min(1).max(1024).default(64),
          responses: Joi.boolean()
            .default(false)
            .description(
              'openai kind: the vendor serves POST /responses (OpenAI does); /v1/responses passes through to it and store or previous_response_id may be used, instead of being translated to chat completions',
            ),
        }),
      )
      .unique('id')
      .default([]),
    models: Joi.array()
      .items(
        Joi.object({
          id: Joi.string()
            .pattern(/^[A-Za-z0-9._:/-]+$/)
            .max(128)
            .required(),
          provider: Joi.string(),
          upstreamModel: Joi.string(),
          deployments: Joi.array()
            .items(
              Joi.object({
                provider: Joi.string().required(),
                upstreamModel: Joi.string().required(),
                weight: Joi.number().integer().min(1).max(1000).default(1),
              }),
            )
            .min(1)
            .max(32)
            .description(
              'where the model is served from, instead of provider and upstreamModel; traffic spreads by weight',
            ),
          priceMicrosPerMTokIn: Joi.number().integer().min(0).required(),
          priceMicrosPerMTokOut: Joi.number().integer().min(0).required(),
          priceMicrosPerMTokCacheRead: Joi.number()
            .integer()
            .min(0)
            .description('prompt tokens read from the vendor prompt cache; unset: priceMicrosPerMTokIn'),
          priceMicrosPerMTokCacheWrite: Joi.number()
            .integer()
            .min(0)
            .description('prompt tokens written to the vendor prompt cache; unset: 1.25 x priceMicrosPerMTokIn'),
          priceMicrosPerMTokCacheWrite1h: Joi.number()
            .integer()
            .min(0)
            .description(
              'prompt tokens written to the vendor prompt cache for one hour; unset: 2 x priceMicrosPerMTokIn',
            ),
          quality: Joi.number().integer().min(0).default(1),
          latency: Joi.number().integer().min(0).default(1),
          jurisdiction: Joi.object({ domicile: Joi.string().required(), region: Joi.string().required() }).required(),
          taskClasses: Joi.array().items(Joi.string()).default(['*']),
        })
          .xor('provider', 'deployments')
          .and('provider', 'upstreamModel')
          .oxor('upstreamModel', 'deployments'),
      )
      .unique('id')
      .default([]),
    policyProfiles: Joi.array()
      .items(
        Joi.object({
          id: Joi.string().max(64).required(),
          models: Joi.array().items(Joi.string()),
          providers: Joi.array().items(Joi.string()),
          domiciles: Joi.array().items(Joi.string()),
          regions: Joi.array().items(Joi.string()),
          enforcement: Joi.string().valid('enforce', 'shadow'),
          signOff: Joi.string().default('a workspace owner'),
          limits: rateLimitsSchema.description("requests and tokens per minute for the profile's keys"),
          cache: Joi.object({
            ttlSeconds: Joi.number().integer().min(1).max(MAX_CACHE_TTL_SECONDS).required(),
          }).description("the response cache, on for the profile's keys, entries kept ttlSeconds"),
          contextWindowFallbacks: fallbacksSchema.description(
            'a vendor refusing the prompt as too long for the model moves the request to these models: { "<model refused, or *>": ["<model>", ...] }',
          ),
          contentPolicyFallbacks: fallbacksSchema.description(
            'a vendor refusing the request by its content policy moves the request to these models: { "<model refused, or *>": ["<model>", ...] }',
          ),
        }),
      )
      .unique('id')
      .default([]),
    highRiskTaskClasses: Joi.array()
      .items(Joi.string())
      .default([])
      .description('task classes (or prefixes ending in .*) that need x-svc-human-oversight: acknowledged'),
    classifier: Joi.object({
      rules: Joi.array()
        .items(
          Joi.object({
            taskClass: Joi.string().required(),
            keywords: Joi.array().items(Joi.string().lowercase()).min(1).required(),
          }),
        )
        .default([
          {
            taskClass: 'code',
            keywords: [
              'function',
              'stack trace',
              'compile',
              'typescript',
              'python',
              'refactor',
              'bug',
              'unit test',
              'sql',
            ],
          },
          { taskClass: 'support', keywords: ['customer', 'ticket', 'refund', 'complaint', 'order'] },
          { taskClass: 'summarize', keywords: ['summarize', 'summarise', 'summary', 'tl;dr'] },
          { taskClass: 'translate', keywords: ['translate', 'translation'] },
        ]),
      fallback: Joi.string().default('general'),
    })
      .default()
      .description('shadow mode names a task class from the prompt with these rules when the request names none'),
    home: Joi.object({ domicile: Joi.string().default('US'), region: Joi.string().allow(null).default(null) })
      .default()
      .description('the jurisdiction x-svc-objective: sovereign keeps to'),
    dataLoss: Joi.string().valid('off', 'redact', 'block').default('off').description('data-loss screening of prompts'),
    bodyBytes: Joi.number()
      .integer()
      .min(1024)
      .default(10 * 1048576)
      .description('request body limit on model routes'),
    connectTimeoutMs: Joi.number().integer().min(10).default(5000),
    headersTimeoutMs: Joi.number().integer().min(10).default(60000),
    bodyTimeoutMs: Joi.number().integer().min(10).default(60000),
    breaker: Joi.object({
      failures: Joi.number()
        .integer()
        .min(1)
        .default(5)
        .description("consecutive failures that open a model's circuit"),
      cooldownMs: Joi.number()
        .integer()
        .min(10)
        .default(30000)
        .description('how long an open circuit skips the deployment before one trial'),
    }).default(),
    retry: Joi.object({
      deadlineMs: Joi.number()
        .integer()
        .min(0)
        .max(600000)
        .default(2000)
        .description(
          "how long past its start a request may wait on a vendor's named wait (retry-after, Gemini's RetryInfo) or back off from throttling, to ask again; a longer wait fails over to the next model at once, and is passed to the client as 429 with retry-after when none answers",
        ),
    }).default(),
    limits: Joi.array()
      .items(
        rateLimitsSchema.keys({
          scope: Joi.object({
            kind: Joi.string().valid('team', 'principal').required(),
            id: Joi.string().min(1).max(200).required(),
          }).required(),
        }),
      )
      .unique((a: ScopeLimits, b: ScopeLimits) => a.scope?.kind === b.scope?.kind && a.scope?.id === b.scope?.id)
      .default([])
      .description("requests and tokens per minute for a team's or a principal's model traffic, in each workspace"),
  }).default(),
}).options({ abortEarly: false, convert: true });

/** Environment variables and the setting each one sets (flags win over these, these over files). */
export const envMap: ReadonlyArray<readonly [string, string]> = [
  ['NODE_ENV', 'env'],
  ['SVC_DATA_DIR', 'dataDir'],
  ['SVC_STORE_URL', 'storeUrl'],
  ['SVC_WORKERS', 'server.workers'],
  ['SVC_BASE_URL', 'baseUrl'],
  ['SVC_MASTER_KEY', 'masterKey'],
  ['SVC_MASTER_KEY_FILE', 'masterKeyFile'],
  ['SVC_HOST', 'server.host'],
  ['SVC_PORT', 'server.port'],
  ['SVC_TRUSTED_PROXIES', 'server.trustedProxies'],
  ['SVC_BODY_LIMIT_BYTES', 'limits.bodyBytes'],
  ['SVC_PUBLIC_RATE_PER_MINUTE', 'rateLimits.publicPerMinute'],
  ['SVC_SIGNIN_RATE_PER_MINUTE', 'rateLimits.signInPerMinute'],
  ['SVC_GATE_RATE_PER_MINUTE', 'rateLimits.gatePerMinute'],
  ['SVC_LOCKOUT_MAX_FAILURES', 'lockout.maxFailures'],
  ['SVC_LOCKOUT_MINUTES', 'lockout.minutes'],
  ['SVC_LOCKOUT_MAX_MINUTES', 'lockout.maxMinutes'],
  ['SVC_RECEIPT_TTL_DAYS', 'receipts.ttlDays'],
  ['SVC_APPROVAL_TTL_HOURS', 'approvals.ttlHours'],
  ['SVC_BULK_FREEZE_CEILING', 'killSwitch.bulkFreezeCeiling'],
  ['SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS', 'webhooks.allowPrivateTargets'],
  ['SVC_WEBHOOKS_TIMEOUT_MS', 'webhooks.timeoutMs'],
  ['SVC_WEBHOOKS_BACKOFF_BASE_MS', 'webhooks.backoffBaseMs'],
  ['SVC_WEBHOOKS_BACKOFF_MAX_MS', 'webhooks.backoffMaxMs'],
  ['SVC_WEBHOOKS_GIVE_UP_AFTER_MS', 'webhooks.giveUpAfterMs'],
  ['SVC_WEBHOOKS_DISPATCH_INTERVAL_MS', 'webhooks.dispatchIntervalMs'],
  ['SVC_LEDGER_CHECKPOINT_INTERVAL_MS', 'ledger.checkpointIntervalMs'],
  ['SVC_LEDGER_PUBLIC', 'ledger.public'],
  ['SVC_RETENTION_DAYS', 'retention.days'],
  ['SVC_RETENTION_SWEEP_INTERVAL_MS', 'retention.sweepIntervalMs'],
  ['SVC_MCP_ALLOW_PRIVATE_UPSTREAMS', 'mcp.allowPrivateUpstreams'],
  ['SVC_MCP_UPSTREAM_TIMEOUT_MS', 'mcp.upstreamTimeoutMs'],
  ['SVC_MCP_UPSTREAM_CALL_TIMEOUT_MS', 'mcp.upstreamCallTimeoutMs'],
  ['SVC_MCP_UPSTREAM_SESSIONS_PER_AGENT', 'mcp.upstreamSessionsPerAgent'],
  ['SVC_MCP_UPSTREAM_SESSIONS_PER_SERVER', 'mcp.upstreamSessionsPerServer'],
  ['SVC_MCP_UPSTREAM_IDLE_MS', 'mcp.upstreamIdleMs'],
  ['SVC_MCP_ALLOWED_ORIGINS', 'mcp.allowedOrigins'],
  ['SVC_OAUTH_ALLOW_PRIVATE_CLIENT_METADATA', 'oauth.allowPrivateClientMetadata'],
  ['SVC_OAUTH_CLIENT_METADATA_TIMEOUT_MS', 'oauth.clientMetadataTimeoutMs'],
  ['SVC_OAUTH_REFRESH_GRACE_SECONDS', 'oauth.refreshGraceSeconds'],
  ['SVC_OAUTH_DEVICE_CODE_TTL_SECONDS', 'oauth.deviceCodeTtlSeconds'],
  ['SVC_OAUTH_DEVICE_POLL_INTERVAL_SECONDS', 'oauth.devicePollIntervalSeconds'],
  ['SVC_OAUTH_PERSON_ACCESS_TTL_SECONDS', 'oauth.personAccessTtlSeconds'],
  ['SVC_OAUTH_PERSON_REFRESH_TTL_DAYS', 'oauth.personRefreshTtlDays'],
  ['SVC_PLAN_AGENTS', 'plan.agents'],
  ['SVC_PLAN_MANDATE_RULES', 'plan.mandateRules'],
  ['SVC_SESSION_TTL_HOURS', 'session.ttlHours'],
  ['SVC_LOG_LEVEL', 'log.level'],
  ['SVC_LOG_FORMAT', 'log.format'],
  ['SVC_METRICS_TOKEN', 'observability.metricsToken'],
  ['SVC_METRICS_PORT', 'observability.metricsPort'],
  ['OTEL_EXPORTER_OTLP_ENDPOINT', 'observability.otlpEndpoint'],
  ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'observability.otlpTracesEndpoint'],
  ['OTEL_SERVICE_NAME', 'observability.serviceName'],
  ['SVC_GATEWAY_ENFORCEMENT', 'gateway.enforcement'],
  ['SVC_GATEWAY_DATA_LOSS', 'gateway.dataLoss'],
  ['SVC_PLAN_MONTHLY_REQUESTS', 'plan.monthlyRequests'],
  ['SVC_PLAN_PEOPLE', 'plan.people'],
  ['SVC_PLAN_SEAT_GRACE_DAYS', 'plan.seatGraceDays'],
  ['SVC_BILLING_STRIPE_SIGNING_SECRET', 'billing.stripeSigningSecret'],
  ['SVC_BILLING_STRIPE_PREVIOUS_SIGNING_SECRET', 'billing.stripePreviousSigningSecret'],
];
