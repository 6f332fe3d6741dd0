import Joi from 'joi';
import { documented, group, int, list, loaded, object, oneOf, record, string, bool, type ValueOf } from './define.js';

/** The model gateway's settings (`gateway.*`): its upstreams, its catalogue, routing and limits. */

/** Provider kinds: `openai` is also the catch-all for any OpenAI-compatible vendor. */
export const PROVIDER_KINDS = ['openai', 'anthropic', 'azure-openai', 'gemini', 'bedrock'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

const ENFORCEMENTS = ['enforce', 'shadow'] as const;
export type Enforcement = (typeof ENFORCEMENTS)[number];

const DATA_LOSS_MODES = ['off', 'redact', 'block'] as const;
export type DataLossMode = (typeof DATA_LOSS_MODES)[number];

/** The AWS variables a bedrock provider's credentials are read from, as the AWS SDKs read them. */
export const AWS_ENV = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'] as const;

/** AWS credentials for a bedrock provider, from the standard AWS environment variables. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** The most requests or tokens per minute a limit may name. */
export const MAX_PER_MINUTE = 1_000_000_000;
/** The longest a cached answer may be kept (30 days). */
export const MAX_CACHE_TTL_SECONDS = 30 * 86_400;

/**
 * A key's, policy profile's, team's or principal's model traffic limits, `{ requestsPerMinute?,
 * tokensPerMinute? }` (docs/gateway.md#rate-limits, gateway/limits.ts); absent: no limit. Declared
 * here, the lowest floor that both the gateway and the keys' records stand on.
 */
const rateLimitFields = {
  requestsPerMinute: int({ min: 1, max: MAX_PER_MINUTE }),
  tokensPerMinute: int({ min: 1, max: MAX_PER_MINUTE }),
};
const rateLimits = object(rateLimitFields);
export type RateLimits = ValueOf<typeof rateLimits>;
/** The joi schema of {@link RateLimits}, which the keys' API validates with too. */
export const rateLimitsSchema = rateLimits.schema as Joi.ObjectSchema<RateLimits>;

const provider = object({
  id: string({ required: true, joi: (s) => s.pattern(/^[A-Za-z0-9._-]+$/).max(64) }),
  kind: oneOf(PROVIDER_KINDS, { required: true }),
  baseUrl: string({
    filled: true,
    joi: (s) =>
      s
        .uri({ scheme: ['http', 'https'] })
        .when('kind', { is: 'bedrock', then: Joi.optional(), otherwise: Joi.required() }),
    doc: "openai: ends before /chat/completions; anthropic: ends before /v1/messages; azure-openai: the resource endpoint; gemini: ends before /v1beta; bedrock: optional (the region's endpoint)",
  }),
  apiVersion: string({
    joi: (s) =>
      s
        .pattern(/^[A-Za-z0-9._-]+$/)
        .when('kind', { is: 'azure-openai', then: Joi.required(), otherwise: Joi.forbidden() }),
    doc: '`azure-openai` only, required: the `api-version` query parameter',
  }),
  region: string({
    joi: (s) =>
      s.pattern(/^[a-z0-9-]+$/).when('kind', { is: 'bedrock', then: Joi.required(), otherwise: Joi.forbidden() }),
    doc: '`bedrock` only, required: the AWS region requests are signed for',
  }),
  aws: loaded<AwsCredentials | null, false>({
    present: false,
    reads: AWS_ENV,
    shown: 'unset',
    doc: 'credentials of every `bedrock` provider, read once at start (null unless both the key id and the secret are set)',
  }),
  apiKeyEnv: string({
    joi: (s) => s.pattern(/^[A-Z_][A-Z0-9_]*$/),
    doc: "the environment variable holding the provider's secret, read once at start",
  }),
  apiKey: loaded<string | null>({
    present: true,
    message: '{{#label}} may not be in a config file: name the environment variable that holds the secret in apiKeyEnv',
  }),
  connections: int({ min: 1, max: 1024, default: 64, doc: 'concurrent connections kept to this upstream' }),
  responses: bool({
    default: false,
    typeOptional: true,
    doc: '`openai` kind: the vendor serves the Responses API at its `/responses` (OpenAI does). `POST /v1/responses` passes through to it unchanged instead of being translated to chat completions, and `store: true`, `previous_response_id` and `conversation` may be used (the request then keeps to such providers)',
  }),
});
export type GatewayProvider = ValueOf<typeof provider>;

/**
 * One place a catalogue model is served from (docs/gateway.md#deployments-and-retries): traffic
 * spreads over them by weight.
 */
const deployment = object({
  provider: string({ required: true }),
  upstreamModel: string({ required: true }),
  weight: int({ min: 1, max: 1000, default: 1 }),
});
export type GatewayDeployment = ValueOf<typeof deployment>;

const model = object(
  {
    id: string({ required: true, joi: (s) => s.pattern(/^[A-Za-z0-9._:/-]+$/).max(128) }),
    /** The first deployment's provider and upstream model (routing, policy and headers name them). */
    provider: string({ filled: true }),
    upstreamModel: string({ filled: true }),
    /** Always at least one: load.ts fills it from `provider` and `upstreamModel` when not given. */
    deployments: list(deployment, {
      filled: true,
      min: 1,
      max: 32,
      doc: '`[ { provider, upstreamModel, weight? } ]` (1-32; weight 1-1000, default 1) instead of `provider` and `upstreamModel`: where the model is served from, traffic spread by weight ([Deployments and retries](gateway.md#deployments-and-retries))',
    }),
    priceMicrosPerMTokIn: int({ min: 0, required: true }),
    priceMicrosPerMTokOut: int({ min: 0, required: true }),
    priceMicrosPerMTokCacheRead: int({
      min: 0,
      shown: '`priceMicrosPerMTokIn`',
      doc: "micro-dollars per million prompt tokens read from the vendor's prompt cache ([Prompt-cache and reasoning tokens](gateway.md#prompt-cache-and-reasoning-tokens)); unset, the input price, so spend is never under-counted",
    }),
    priceMicrosPerMTokCacheWrite: int({
      min: 0,
      shown: '1.25 x `priceMicrosPerMTokIn`',
      doc: "micro-dollars per million prompt tokens written to the vendor's prompt cache (Anthropic's five-minute writes, Bedrock's writes)",
    }),
    priceMicrosPerMTokCacheWrite1h: int({
      min: 0,
      shown: '2 x `priceMicrosPerMTokIn`',
      doc: "micro-dollars per million prompt tokens written to the vendor's prompt cache for one hour (Anthropic)",
    }),
    quality: int({ min: 0, default: 1 }),
    latency: int({ min: 0, default: 1 }),
    jurisdiction: object(
      { domicile: string({ required: true }), region: string({ required: true }) },
      { required: true },
    ),
    taskClasses: list(string(), {
      default: ['*'],
      doc: 'the task classes a model serves (`*`: every class of chat). Task class `embedding` marks embedding models: `POST /v1/embeddings` is routed among the models whose `taskClasses` name it (`*` does not); embeddings are served through `openai`-kind providers (OpenAI and compatible) only, and a model marked `embedding` on another kind is a configuration error naming it',
    }),
  },
  {
    joi: (s) => s.xor('provider', 'deployments').and('provider', 'upstreamModel').oxor('upstreamModel', 'deployments'),
  },
);
export type GatewayModel = ValueOf<typeof model>;

/** A profile's fallbacks: the model refused (or `*`) to the models tried next, in order. */
const fallbacks = (doc: string) =>
  record(Joi.string().max(128), list(string({ max: 128 }), { min: 1, max: 32, joi: (s) => s.unique() }), {
    joi: (s) => s.max(256),
    doc,
  });

/** Restrictions a key's policy profile puts on routing (every list: absent means any). */
const policyProfile = object({
  id: string({ max: 64, required: true }),
  models: list(string()),
  providers: list(string()),
  domiciles: list(string()),
  regions: list(string()),
  enforcement: oneOf(ENFORCEMENTS),
  /** Who signs off a relaxation of this profile (named in 409 policy_conflict). */
  signOff: string({ default: 'a workspace owner' }),
  limits: documented(rateLimits, {
    doc: "`{ requestsPerMinute?, tokensPerMinute? }` for the traffic of the profile's keys ([Rate limits](gateway.md#rate-limits))",
  }),
  cache: object(
    { ttlSeconds: int({ min: 1, max: MAX_CACHE_TTL_SECONDS, required: true }) },
    {
      shown: 'none (off)',
      doc: "`{ ttlSeconds }` (1 to 2 592 000): the [response cache](gateway.md#response-cache), on for the profile's keys",
    },
  ),
  contextWindowFallbacks: fallbacks(
    '`{ "<model refused, or *>": ["<model>", …] }`: a vendor refusing the prompt as too long for the model moves the request to these models ([Retries and failover](gateway.md#retries-and-failover)), as LiteLLM\'s `context_window_fallbacks`',
  ),
  contentPolicyFallbacks: fallbacks("the same, for a vendor's content-policy refusal"),
});
export type PolicyProfile = ValueOf<typeof policyProfile>;

/** A team's or principal's limits (`gateway.limits`), in every workspace that has it. */
const scopeLimits = object({
  ...rateLimitFields,
  scope: object(
    { kind: oneOf(['team', 'principal'], { required: true }), id: string({ min: 1, max: 200, required: true }) },
    { required: true },
  ),
});
export type ScopeLimits = ValueOf<typeof scopeLimits>;

const classifierRule = object({
  taskClass: string({ required: true }),
  /** Lower-case words or phrases; the first rule with a match names the class. */
  keywords: list(string({ joi: (s) => s.lowercase() }), { min: 1, required: true }),
});
export type ClassifierRule = ValueOf<typeof classifierRule>;

export const gateway = group({
  enforcement: oneOf(ENFORCEMENTS, {
    default: 'shadow',
    env: 'SVC_GATEWAY_ENFORCEMENT',
    doc: '`enforce` routes; `shadow` serves the requested model and reports the routing choice',
  }),
  providers: list(provider, {
    default: [],
    joi: (s) => s.unique('id'),
    doc: "upstreams (the shape in [Model gateway](gateway.md#model-gateway); the `kind`s are in [Provider kinds](gateway.md#provider-kinds)); each provider's secret comes from the environment variable its `apiKeyEnv` names",
  }),
  models: list(model, {
    default: [],
    joi: (s) => s.unique('id'),
    doc: 'the model catalogue (the shape in [Model gateway](gateway.md#model-gateway)): each model names a configured provider and its prices',
  }),
  policyProfiles: list(policyProfile, {
    default: [],
    joi: (s) => s.unique('id'),
    doc: '`{ id, models?, providers?, domiciles?, regions?, enforcement?, signOff }`, bound to keys by `policyProfile`',
  }),
  /** Task classes that need `x-svc-human-oversight: acknowledged`. */
  highRiskTaskClasses: list(string(), {
    default: [],
    doc: 'classes (or `prefix.*`) that need `x-svc-human-oversight: acknowledged`',
  }),
  classifier: group(
    {
      rules: list(classifierRule, {
        default: [
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
        ],
      }),
      fallback: string({ default: 'general' }),
    },
    {
      shown: 'code, support, summarize, translate keywords; fallback `general`',
      doc: "shadow mode's task-class rules `{ rules: [{ taskClass, keywords }], fallback }`, naming a class from the prompt when the request names none",
    },
  ),
  /** The deployment's own jurisdiction, for `x-svc-objective: sovereign`. */
  home: group(
    { domicile: string({ default: 'US' }), region: string({ nullable: true, default: null }) },
    { shown: '`{ domicile: "US", region: null }`', doc: 'the jurisdiction `x-svc-objective: sovereign` keeps to' },
  ),
  dataLoss: oneOf(DATA_LOSS_MODES, {
    default: 'off',
    env: 'SVC_GATEWAY_DATA_LOSS',
    doc: 'data-loss screening of prompts: `off`, `redact`, `block` (a workspace may set its own)',
  }),
  bodyBytes: int({ min: 1024, default: 10 * 1048576, doc: 'request body limit on the model routes' }),
  connectTimeoutMs: int({ min: 10, default: 5000, doc: 'connecting to an upstream (a timeout fails over)' }),
  /** Until the first byte of the upstream's answer. */
  headersTimeoutMs: int({
    min: 10,
    default: 60000,
    doc: "until the first byte of the upstream's answer (a timeout fails over)",
  }),
  /** Between two chunks of the upstream's body. */
  bodyTimeoutMs: int({
    min: 10,
    default: 60000,
    doc: "between two chunks of the upstream's body (a timeout fails over)",
  }),
  breaker: group({
    failures: int({
      min: 1,
      default: 5,
      doc: "consecutive failures that open a deployment's circuit (a model's is open when all its deployments' are)",
    }),
    cooldownMs: int({
      min: 10,
      default: 30000,
      doc: 'how long an open circuit skips the deployment before one trial',
    }),
  }),
  /** How long past its start a request may wait on a vendor's named wait or back off from throttling (gateway/failover.ts). */
  retry: group({
    deadlineMs: int({
      min: 0,
      max: 600000,
      default: 2000,
      doc: "how long past its start a request may wait on a vendor's named wait (`retry-after`, Gemini's `RetryInfo`) or back off from throttling, to ask again; a longer wait fails over to the next model at once, and is passed to the client as `429` with `retry-after` when none answers ([Retries and failover](gateway.md#retries-and-failover))",
    }),
  }),
  limits: list(scopeLimits, {
    default: [],
    joi: (s) =>
      s.unique((a: ScopeLimits, b: ScopeLimits) => a.scope?.kind === b.scope?.kind && a.scope?.id === b.scope?.id),
    doc: '`[ { scope: { kind: "team" \\| "principal", id }, requestsPerMinute?, tokensPerMinute? } ]`: per-minute limits on a team\'s or a principal\'s model traffic, in each workspace (1 to 10^9 each; one entry per scope)',
  }),
});
export type GatewaySettings = ValueOf<typeof gateway>;
