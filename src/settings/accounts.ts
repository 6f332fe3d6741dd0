import { bool, group, int, number, string } from './define.js';

/**
 * Who may come in and how much they may use: the OAuth server's clients and people, the free
 * plan's allowances and the operator's own billing.
 */

/** The OAuth authorization server (oauth/): Client ID Metadata Documents and refresh token rotation. */
export const oauth = group({
  allowPrivateClientMetadata: bool({
    default: false,
    env: 'SVC_OAUTH_ALLOW_PRIVATE_CLIENT_METADATA',
    doc: 'a `client_id` that is a URL ([Client ID Metadata Document](mcp-oauth.md#oauth-for-mcp-clients)) may be fetched from loopback and private addresses (link-local never); for tests and closed networks. `mcp.allowPrivateUpstreams` and `webhooks.allowPrivateTargets` do not open it',
  }),
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
export const allowance = (min: number, env: string, doc: string) =>
  int({ min, nullable: true, default: null, env, shown: 'unlimited (`null`)', doc });

export const plan = group({
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

/** A provider's signing secret; a refusal never quotes it (Joi's pattern message would). */
export const signingSecret = (doc: string, env: string) =>
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

/** The operator's own billing (plans/service.ts): only events signed with these secrets change a plan. */
export const billing = group({
  stripeSigningSecret: signingSecret(
    "the operator's Stripe billing endpoint secret: only billing events (`customer.subscription.*`, `invoice.payment_failed`) signed with it change a workspace's plan; unset, no plan is lifted",
    'SVC_BILLING_STRIPE_SIGNING_SECRET',
  ),
  stripePreviousSigningSecret: signingSecret(
    'during a rotation of the secret above, the one before it (also accepted); unset it once Stripe signs with the new one only',
    'SVC_BILLING_STRIPE_PREVIOUS_SIGNING_SECRET',
  ),
});
