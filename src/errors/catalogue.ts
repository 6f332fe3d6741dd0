/**
 * The one error catalogue: every `error.type` the service can answer with, its HTTP status, its
 * default message and the `fix` (one sentence on what to send differently).
 *
 * Invariants:
 * - Types are snake_case, stable and never reused for another meaning: clients branch on them.
 *   New types may be added; none is ever renamed or removed.
 * - Every entry has a fix; `docs` is derived from the type (`/docs/errors#<type>`), and the docs
 *   page is generated from this table, so the two cannot drift.
 * - Types that carry a per-field `errors` array are marked `validation`.
 */

export interface CatalogueEntry {
  readonly status: number;
  readonly message: string;
  readonly fix: string;
  /** Carries `errors: [{ field, message }]`, and its message joins them with "; ". */
  readonly validation?: boolean;
  /** The docs page (and heading) that describes it, `page.md#anchor` under docs/, named on /docs/errors. */
  readonly section: string;
  /**
   * The one type with two statuses (plan_limit_reached: 402 for the console's allowances of
   * agents and rules, 429 for the monthly request allowance of the gateway): the other status, by its name.
   */
  readonly variants?: Readonly<Record<string, number>>;
  /**
   * The exit status of `svc` for this type (docs/cli.md#command-line), for the operator's errors that
   * stop a command or a start before any request: 3 cannot reach or open the store, the master
   * key does not match it, or the port cannot be bound. Other types exit 1, or 2 when their
   * status is 400.
   */
  readonly exit?: number;
}

const catalogue = {
  // Common to every route
  invalid_json: {
    status: 400,
    section: 'api.md#errors',
    message: 'The request body is not valid JSON.',
    fix: 'Send a well-formed JSON body with content-type: application/json.',
  },
  invalid_request: {
    status: 400,
    section: 'api.md#errors',
    validation: true,
    message: 'The request has missing or malformed fields.',
    fix: 'Correct each field listed in errors and send the request again.',
  },
  unauthenticated: {
    status: 401,
    section: 'api.md#errors',
    message: 'No credential of the kind this route takes was sent.',
    fix: 'Send the credential this route takes (see the message) and try again.',
  },
  invalid_api_key: {
    status: 401,
    section: 'api.md#errors',
    message: 'The key is unknown, expired or revoked.',
    fix: 'Send a current key; mint a new one if this one was revoked.',
  },
  forbidden: {
    status: 403,
    section: 'api.md#errors',
    message: 'The credential is valid but may not do this.',
    fix: 'Use a credential whose role or scope permits this request.',
  },
  csrf: {
    status: 403,
    section: 'security.md#security-model',
    message: 'Console writes need the x-svc-csrf: 1 header and, when sent, an Origin of this deployment.',
    fix: 'Send x-svc-csrf: 1 on every console write, from a page served by this deployment.',
  },
  not_found: {
    status: 404,
    section: 'api.md#errors',
    message: 'No such object in this workspace.',
    fix: 'Check the id; ids of another workspace are not visible from this one.',
  },
  route_not_found: {
    status: 404,
    section: 'api.md#errors',
    message: 'No route matches this method and path.',
    fix: 'Use the method and path named in didYouMean, or see the API reference.',
  },
  method_not_allowed: {
    status: 405,
    section: 'api.md#errors',
    message: 'This path does not accept this method.',
    fix: 'Use one of the methods listed in the allow header.',
  },
  separation_of_duties: {
    status: 403,
    section: 'gate.md#approvals-and-the-kill-switch',
    message: 'The person an agent acts for may not decide its approval.',
    fix: 'Ask another permitted person to decide this approval.',
  },
  second_owner_required: {
    status: 409,
    section: 'gate.md#approvals-and-the-kill-switch',
    message: 'This change needs a second owner.',
    fix: 'Ask a different owner to confirm the change.',
  },
  second_person_required: {
    status: 409,
    section: 'gate.md#approvals-and-the-kill-switch',
    message: 'Your approval is recorded; a second, different person must also approve.',
    fix: 'Ask a different permitted person to approve as well.',
  },
  // The approve and deny routes' own error: deciding what is already decided.
  approval_closed: {
    status: 409,
    section: 'gate.md#approvals-and-the-kill-switch',
    message: 'This approval is no longer waiting: it was decided or it expired.',
    fix: 'Read the approval (GET /api/w/{wid}/approvals) to see how it ended; the agent can ask again.',
  },
  body_too_large: {
    status: 413,
    section: 'operations.md#body-limits',
    message: 'The request body is over the limit for this route.',
    fix: 'Send a smaller body; most routes accept at most 1 MB.',
  },
  rate_limited: {
    status: 429,
    section: 'gateway.md#rate-limits',
    message: 'Too many requests.',
    fix: 'Wait the number of seconds in the retry-after header, then retry. On the model gateway, x-svc-ratelimit-scope names the key, team, principal or policy profile whose per-minute limit was reached; an admin can raise it.',
  },
  overloaded: {
    status: 503,
    section: 'security.md#security-model',
    message: 'The server is shedding load.',
    fix: 'Wait the number of seconds in the retry-after header, then retry.',
  },
  // Added: the store cannot take writes (its disk or quota is full, or read-only) or cannot be read
  // (its file is damaged). Fails closed: nothing of the request was kept.
  store_unavailable: {
    status: 503,
    section: 'operations.md#when-the-disk-fills',
    message:
      'The server cannot record anything right now (its store has no space to write); nothing of this request was kept.',
    fix: "Retry after the seconds in retry-after; if it persists, the operator must act on the cause the server's log names: free disk space for the data dir, or restore a damaged store file from its backup.",
  },
  request_timeout: {
    status: 408,
    section: 'security.md#security-model',
    message: 'The request did not arrive in time.',
    fix: 'Send the whole request promptly; the server closes connections that stall.',
  },
  headers_too_large: {
    status: 431,
    section: 'security.md#security-model',
    message: 'The request headers are too large.',
    fix: 'Send fewer or smaller headers (cookies included).',
  },
  internal: {
    status: 500,
    section: 'api.md#errors',
    message: 'Internal error.',
    fix: 'Retry later; if it persists, give the operator the requestId.',
  },
  // Sign-in
  totp_required: {
    status: 401,
    section: 'console.md#members-and-two-factor',
    message: 'This account needs a two-factor code.',
    fix: 'Send the current code from your authenticator app as totp.',
  },
  // Added (issue 15): too many wrong passwords or codes in a row at one account. The answer
  // carries `lockout` (what is locked: "password" or "totp") and `lockedUntil`, and retry-after.
  account_locked: {
    status: 429,
    section: 'console.md#members-and-two-factor',
    message: 'This account is locked after too many wrong attempts.',
    fix: 'Wait until lockedUntil, or ask an owner of your workspace to lift the lockout.',
  },

  // The gate
  invalid_status: {
    status: 400,
    section: 'gate.md#the-gate',
    message: 'Settlement status must be completed, failed or cancelled.',
    fix: 'Send status completed, failed or cancelled.',
  },
  invalid_amount: {
    status: 400,
    section: 'gate.md#the-gate',
    message: 'The amount is not a whole number of minor currency units.',
    fix: 'Send the amount as a positive integer in minor units (cents, not euros).',
  },
  plan_limit_reached: {
    status: 402,
    section: 'configuration.md#configuration',
    variants: { monthlyRequests: 429 },
    message: "The plan's allowance is used.",
    fix: 'Remove unused items or raise the allowance in the configuration.',
  },
  invalid_mandate: {
    status: 400,
    section: 'gate.md#the-gate',
    validation: true,
    message: 'The mandate has malformed rules.',
    fix: 'Correct each rule field listed in errors.',
  },
  malformed_mandate_credential: {
    status: 400,
    section: 'ap2.md#what-svc-verifies',
    validation: true,
    message: 'The AP2 credential cannot be read as an SD-JWT.',
    fix: 'Send the compact SD-JWT as issued: the issuer-signed JWT, its disclosures, each followed by ~.',
  },
  invalid_mandate_credential: {
    status: 422,
    section: 'ap2.md#what-svc-verifies',
    validation: true,
    message: 'The AP2 credential failed verification.',
    fix: 'Send a credential signed ES256 by a trusted issuer, unexpired, bound to the agent key, with only the disclosures it references.',
  },
  unresolved_constraint: {
    status: 422,
    section: 'ap2.md#mapping-ap2-constraints-to-rules',
    validation: true,
    message: 'The AP2 mandate has a constraint svc cannot turn into a rule.',
    fix: 'Issue the mandate with the constraints the mapping table lists, in their documented shapes.',
  },
  holder_key_required: {
    status: 409,
    section: 'ap2.md#the-agents-holder-key',
    message: 'The agent has no registered AP2 holder key.',
    fix: 'Register the public key the agent holds (PUT /api/w/{wid}/agents/{aid}/ap2/holder-key), then import again.',
  },
  invalid_trust_settings: {
    status: 400,
    section: 'ap2.md#trusted-issuers',
    validation: true,
    message: 'The AP2 settings have malformed fields.',
    fix: 'Correct each field listed in errors.',
  },
  mandate_mismatch: {
    status: 422,
    section: 'ap2.md#presenting-a-closed-mandate',
    validation: true,
    message: 'The closed AP2 mandate does not match the request or its open mandate.',
    fix: 'Present the closed mandate made for this payment: the same amount, currency and payee, and the open mandate it chains to as imported.',
  },
  key_binding_replayed: {
    status: 409,
    section: 'ap2.md#presenting-a-closed-mandate',
    message: 'This key-binding JWT was presented before.',
    fix: 'Make a new closed mandate with a fresh nonce for each presentation.',
  },
  presentation_refused: {
    status: 409,
    section: 'ap2.md#one-presentation-at-a-time',
    message: 'The open AP2 mandate may not be presented again now.',
    fix: 'Wait for the previous presentation to be decided; after a refusal, name its action in ap2.refusal.',
  },
  agent_key_required: {
    status: 403,
    section: 'gate.md#the-gate',
    message: 'This route takes an agent key; the key sent is not bound to an agent.',
    fix: "Send the agent's own key (an ask_ key minted for the agent).",
  },
  agent_not_found: {
    status: 403,
    section: 'gate.md#the-gate',
    message: 'The agent behind this key was removed.',
    fix: 'Register the agent again and mint it a new key.',
  },
  idempotency_conflict: {
    status: 409,
    section: 'gate.md#the-gate',
    message: 'This idempotency key was already used for a different request.',
    fix: 'Use a new idempotency key for a new request, or resend the original body unchanged.',
  },
  confirm_broaden: {
    status: 409,
    section: 'gate.md#the-gate',
    message: 'A rule allowing anywhere would sit beside a narrower rule for the same agent.',
    fix: 'Send confirmBroaden: true to save the broader rule on purpose.',
  },
  not_allowed: {
    status: 409,
    section: 'gate.md#the-gate',
    message: 'Only an allowed action can be settled.',
    fix: 'Settle only actions whose decision was allow.',
  },
  already_settled: {
    status: 409,
    section: 'gate.md#the-gate',
    message: 'This action is already settled.',
    fix: 'Do not settle an action twice; read it with GET to see its settlement.',
  },

  // The model gateway
  unclassified_request: {
    status: 400,
    section: 'gateway.md#model-gateway',
    message: 'The request names no task class and the key has no default class.',
    fix: 'Send an x-svc-task-class header, or bind a default task class to the key.',
  },
  sensitive_data_blocked: {
    status: 400,
    section: 'gateway.md#model-gateway',
    message: 'The request contains sensitive data and the workspace blocks it.',
    fix: 'Remove the sensitive data named by kind in the message and send again.',
  },
  approval_required: {
    status: 402,
    section: 'gateway.md#model-gateway',
    message: "The budget's approval step is reached.",
    fix: 'Ask the budget owner named in the message to approve more spend.',
  },
  seat_limit_reached: {
    status: 402,
    section: 'gateway.md#model-gateway',
    message: "The free plan's people limit is in use this month and its grace period has ended.",
    fix: 'Remove people from the workspace or move to a plan with more seats.',
  },
  agent_stopped: {
    status: 403,
    section: 'gateway.md#model-gateway',
    message: 'The agent is stopped; nothing was sent.',
    fix: 'Ask the person the agent acts for, an owner or an admin to restart it in the console.',
  },
  signing_not_allowed: {
    status: 403,
    section: 'signed-requests.md#when-svc-refuses',
    message: "The agent's mandate does not name the request's domain; nothing was signed.",
    fix: "Ask an owner to add the domain to a rule's domains in the agent's mandate, or sign requests only to domains it names.",
  },
  policy_conflict: {
    status: 409,
    section: 'gateway.md#model-gateway',
    message: 'No model satisfies the policy.',
    fix: 'Apply one of the relaxations listed, signed off by the person named.',
  },
  budget_exhausted: {
    status: 429,
    section: 'gateway.md#model-gateway',
    message: "The budget's hard ceiling is reached.",
    fix: 'Wait for the next budget period or ask an admin to raise the budget.',
  },
  upstream_failure: {
    status: 502,
    section: 'gateway.md#model-gateway',
    message: 'Every eligible model failed.',
    fix: 'Retry later; attemptedModels lists what was tried.',
  },
  // Added: every eligible model's vendor throttled the request (429, or its own throttling
  // error), past the waits the gateway may spend on it (gateway.retry.deadlineMs).
  upstream_rate_limited: {
    status: 429,
    section: 'gateway.md#retries-and-failover',
    message: 'Every eligible model is throttling.',
    fix: 'Wait the number of seconds in the retry-after header (when given), then retry; attemptedModels lists what was tried.',
  },

  // The OAuth authorization server for MCP clients (RFC 6749, 7591, 8707), answered as
  // `{ error, error_description }` on its own routes.
  invalid_client_metadata: {
    status: 400,
    section: 'mcp-oauth.md#oauth-for-mcp-clients',
    message: 'The client registration is malformed.',
    fix: 'Send client_name, redirect_uris and, optionally, token_endpoint_auth_method none, client_secret_post or client_secret_basic.',
  },
  invalid_redirect_uri: {
    status: 400,
    section: 'mcp-oauth.md#oauth-for-mcp-clients',
    message: 'A redirect URI is neither https nor http on a loopback address.',
    fix: 'Register https redirect URIs, or http ones on 127.0.0.1, [::1] or localhost.',
  },
  invalid_client: {
    status: 401,
    section: 'mcp-oauth.md#oauth-for-mcp-clients',
    message: 'The client is unknown or did not authenticate as registered.',
    fix: 'Send the client_id you registered, and its client_secret the way you registered.',
  },
  invalid_grant: {
    status: 400,
    section: 'mcp-oauth.md#oauth-for-mcp-clients',
    message: 'The code or refresh token is invalid, expired, already used, or was issued to another client.',
    fix: 'Start the authorization again; a used refresh token ends the whole connection.',
  },
  unsupported_grant_type: {
    status: 400,
    section: 'mcp-oauth.md#oauth-for-mcp-clients',
    message: 'The grant type is not supported.',
    fix: 'Use authorization_code, refresh_token, or urn:ietf:params:oauth:grant-type:device_code.',
  },
  invalid_scope: {
    status: 400,
    section: 'mcp-oauth.md#oauth-for-mcp-clients',
    message: 'The scope asked for is malformed, or more than the connection was granted.',
    fix: 'Ask for svc:agent, with offline_access for a refresh token; at refresh, no more than was granted.',
  },
  invalid_target: {
    status: 400,
    section: 'mcp-oauth.md#oauth-for-mcp-clients',
    message: "The resource is not this deployment's /mcp address.",
    fix: 'Send resource set to the /mcp URL named in the protected-resource metadata.',
  },
  // Added: the device authorization grant (RFC 8628) behind `svc login`; the token endpoint's
  // answers while the person has not yet decided, as the RFC spells them.
  authorization_pending: {
    status: 400,
    section: 'cli.md#signing-in-svc-login',
    message: 'The person has not approved or denied this sign-in yet.',
    fix: 'Poll again after the interval; the person approves the code at the verification address.',
  },
  slow_down: {
    status: 400,
    section: 'cli.md#signing-in-svc-login',
    message: 'The token endpoint was polled sooner than the interval allows.',
    fix: 'Wait 5 seconds longer between polls from now on, as RFC 8628 says.',
  },
  access_denied: {
    status: 400,
    section: 'cli.md#signing-in-svc-login',
    message: 'The person denied this sign-in.',
    fix: 'Run svc login again if the denial was a mistake, and approve the code the CLI prints.',
  },
  expired_token: {
    status: 400,
    section: 'cli.md#signing-in-svc-login',
    message: 'The device code expired before the person approved it.',
    fix: 'Run svc login again and approve the new code within its lifetime.',
  },

  // Machine administration (service tokens, blueprints, freezes, drills)
  invalid_token: {
    status: 401,
    section: 'gate.md#machine-administration',
    message: 'The service token is unknown, revoked, or used from an address it is not pinned to.',
    fix: 'Send a current service token from an address in its ipAllow ranges.',
  },
  token_expired: {
    status: 401,
    section: 'gate.md#machine-administration',
    message: 'The service token has expired.',
    fix: 'Ask an owner to create a new service token.',
  },
  invalid_budget: {
    status: 400,
    section: 'gate.md#machine-administration',
    validation: true,
    message: 'The budget has an invalid scope, amount, period or ladder.',
    fix: 'Correct each budget field listed in errors.',
  },
  missing_scope: {
    status: 403,
    section: 'gate.md#machine-administration',
    message: 'The service token lacks the scope this route needs.',
    fix: 'Use a token created with the scope named in the message.',
  },
  template_only: {
    status: 400,
    section: 'gate.md#machine-administration',
    message: 'A service token may attach mandates from templates only.',
    fix: 'Remove mandate or rules from the body and name templates instead.',
  },
  unknown_template: {
    status: 400,
    section: 'gate.md#machine-administration',
    message: 'A named template or blueprint does not exist in this workspace.',
    fix: 'Name templates and blueprints that exist in this workspace.',
  },
  invalid_workspace_file: {
    status: 400,
    section: 'setup-as-code.md#the-workspace-file',
    validation: true,
    message: 'The workspace file is not valid.',
    fix: 'Correct each field listed in errors (each names its path and line in the file), then apply the file again.',
  },
  secret_in_file: {
    status: 400,
    section: 'setup-as-code.md#secrets-are-never-in-the-file',
    validation: true,
    message: 'The workspace file holds a secret.',
    fix: 'Write the secret field as { fromEnv: NAME } and set the environment variable NAME where svc apply runs; never put a secret in the file.',
  },
  secret_unset: {
    status: 400,
    section: 'setup-as-code.md#secrets-are-never-in-the-file',
    validation: true,
    message: 'A secret the workspace file refers to is not set in the environment.',
    fix: 'Set each environment variable named in errors (the file refers to it with fromEnv) where svc apply runs, then apply again.',
  },
  invalid_selector: {
    status: 400,
    section: 'gate.md#machine-administration',
    message: 'The selector is malformed.',
    fix: 'Send a selector with agentIds, tags, blueprint, actsFor or all.',
  },
  nothing_selected: {
    status: 400,
    section: 'gate.md#machine-administration',
    message: 'The selector matches no agent.',
    fix: 'Send a selector that matches at least one agent.',
  },
  reason_required: {
    status: 400,
    section: 'gate.md#machine-administration',
    message: 'A freeze needs a reason.',
    fix: 'Send a non-empty reason.',
  },
  confirm_count_required: {
    status: 409,
    section: 'gate.md#machine-administration',
    message: 'A bulk freeze needs confirmCount equal to the number of agents selected.',
    fix: 'Send confirmCount equal to the current match count.',
  },
  selection_changed: {
    status: 409,
    section: 'gate.md#machine-administration',
    message: 'The number of agents selected changed since it was counted.',
    fix: 'Check the selection again and send confirmCount equal to newCount.',
  },
  drill_cooldown: {
    status: 429,
    section: 'gate.md#machine-administration',
    message: 'One drill per hour per workspace per token.',
    fix: 'Wait the number of seconds in the retry-after header before the next drill.',
  },

  // Validation types reserved for applications and upstreams
  invalid_application: {
    status: 400,
    section: 'api.md#errors',
    validation: true,
    message: 'The application has malformed fields.',
    fix: 'Correct each field listed in errors.',
  },
  invalid_upstream: {
    status: 400,
    section: 'api.md#errors',
    validation: true,
    message: 'The upstream has malformed fields.',
    fix: 'Correct each field listed in errors.',
  },

  // Added (issue 20): the MCP proxy's pins, answered in JSON-RPC error.data at /mcp.
  tool_changed: {
    status: 409,
    section: 'mcp-oauth.md#pinned-tools-rug-pulls-are-withheld',
    message:
      'The upstream tool changed (its description, input or output schema, or annotations) since an owner or admin approved it, or was never approved; it is withheld.',
    fix: 'Ask an owner or admin to review the change in the console (MCP section) and approve it; then list the tools again.',
  },

  // The operator's errors, met by `svc` before any request is served.
  // The server never answers with them; their status is the one a health check would see.
  store_not_found: {
    status: 503,
    section: 'operations.md#when-something-goes-wrong',
    exit: 3,
    message: 'There is no store in the data directory.',
    fix: 'Check --data-dir (or SVC_DATA_DIR) and the directory you run from; only `svc serve` and `svc init` create a new store.',
  },
  store_damaged: {
    status: 503,
    section: 'operations.md#when-something-goes-wrong',
    exit: 3,
    message: 'store file damaged: restore from backup.',
    fix: 'Stop the server, move the damaged svc.mdb aside, and restore the last `svc backup` file as svc.mdb together with the master.key saved with it.',
  },
  master_key_missing: {
    status: 503,
    section: 'operations.md#when-something-goes-wrong',
    exit: 3,
    message: 'The store exists but its master key was not found; svc never makes a new key over an existing store.',
    fix: "Put the backup's master.key back beside svc.mdb in the data directory, or point SVC_MASTER_KEY_FILE at it.",
  },
  master_key_mismatch: {
    status: 503,
    section: 'operations.md#when-something-goes-wrong',
    exit: 3,
    message: 'The master key is not the one this store was sealed with.',
    fix: "Use the master.key that was saved with this store (the backup's master.key): put it beside svc.mdb, or point SVC_MASTER_KEY_FILE or SVC_MASTER_KEY at it.",
  },
  port_in_use: {
    status: 503,
    section: 'operations.md#when-something-goes-wrong',
    exit: 3,
    message: 'The port is already in use by another process.',
    fix: 'Stop what holds the port, or choose another one with --port (or SVC_PORT).',
  },
  address_unavailable: {
    status: 503,
    section: 'operations.md#when-something-goes-wrong',
    exit: 3,
    message: 'The address to bind is not an address of this machine.',
    fix: 'Choose an address of this machine with --host (or SVC_HOST): 127.0.0.1, or 0.0.0.0 for every interface.',
  },
  permission_denied: {
    status: 503,
    section: 'operations.md#when-something-goes-wrong',
    exit: 3,
    message: 'Permission denied.',
    fix: 'Give the user svc runs as read and write access to the data directory (chown, chmod), or choose another with --data-dir (or SVC_DATA_DIR).',
  },
  not_a_directory: {
    status: 503,
    section: 'operations.md#when-something-goes-wrong',
    exit: 3,
    message: 'The data directory is not a directory.',
    fix: 'Point --data-dir (or SVC_DATA_DIR) at a directory, or move the file that stands in its place.',
  },
  disk_full: {
    status: 503,
    section: 'operations.md#when-something-goes-wrong',
    exit: 3,
    message: 'The disk holding the data directory is full (or read-only).',
    fix: 'Free space on the disk of the data directory (or make it writable), then run the command again; nothing was half-written.',
  },

  // Added: the command line's own errors, printed by `svc` before or instead of a request; the
  // server never answers with them.
  usage: {
    status: 400,
    section: 'cli.md#command-line',
    exit: 2,
    message: 'The command line is malformed: an unknown command or flag, or a missing or invalid value.',
    fix: 'See svc --help for the commands, and svc <command> --help for the flags a command takes.',
  },
  invalid_configuration: {
    status: 400,
    section: 'cli.md#command-line',
    exit: 2,
    message: 'A setting (in the file given to --config, or an SVC_ environment variable) is invalid.',
    fix: 'Correct each setting the message names, in the --config file or its SVC_ environment variable (docs/configuration.md lists them), and run the command again.',
  },
  unknown_context: {
    status: 400,
    section: 'cli.md#signing-in-svc-login',
    exit: 2,
    message: 'No sign-in context of that name is stored for this user.',
    fix: 'Run svc whoami --all to list your contexts, or svc login --url URL --name NAME to add one.',
  },
  invalid_jwks: {
    status: 400,
    section: 'cli.md#command-line',
    exit: 2,
    message: 'The key set given to --jwks is not a JSON Web Key Set.',
    fix: 'Pass a JSON file or URL holding { "keys": [...] }, as served at /.well-known/jwks.json.',
  },
  invalid_receipt: {
    status: 400,
    section: 'cli.md#command-line',
    message: 'The receipt does not verify: its signature, key, issuer or shape is wrong.',
    fix: "Check that the receipt was copied whole and that the key set is the issuing server's; a receipt that was changed never verifies.",
  },
  unreachable: {
    status: 503,
    section: 'cli.md#command-line',
    exit: 3,
    message: 'The server named by --url (or SVC_URL) did not answer.',
    fix: 'Start the server, or pass --url (or SVC_URL) naming where it runs.',
  },
  local_only: {
    status: 400,
    section: 'cli.md#command-line',
    exit: 2,
    message: 'This command, or this form of it, works only with --local on the store.',
    fix: 'Run it with --local on the machine that holds the store (--data-dir), or do it in the console.',
  },
  ambiguous_workspace: {
    status: 400,
    section: 'cli.md#command-line',
    exit: 2,
    message: 'The store holds several workspaces and the command did not name one.',
    fix: 'Name one with --workspace.',
  },
  worker_failed: {
    status: 503,
    section: 'cli.md#command-line',
    message: 'A worker process of svc serve --workers failed to start.',
    fix: "Read the worker's error above it in the log; it is the same error a single process would meet.",
  },
  store_newer_schema: {
    status: 503,
    section: 'operations.md#upgrading',
    exit: 3,
    message: 'The store was written by a newer svc than this one.',
    fix: 'Run the svc version that last wrote this store (or a newer one), or restore a backup made by this version.',
  },
  store_older_schema: {
    status: 503,
    section: 'operations.md#upgrading',
    exit: 3,
    message: 'The store was written by an older svc and needs migrating.',
    fix: 'Run svc migrate (svc migrate --dry-run says what it will do), then run the command again.',
  },
  store_cannot_open: {
    status: 503,
    section: 'cli.md#command-line',
    exit: 3,
    message: 'The store could not be opened.',
    fix: 'Check --store (or SVC_STORE_URL) and --data-dir (or SVC_DATA_DIR); the message says what failed.',
  },
  store_write_failed: {
    status: 503,
    section: 'cli.md#command-line',
    exit: 3,
    message: 'A write to the store failed; nothing of it was applied.',
    fix: 'Run the command again; if it fails the same way, check the disk of the data directory and the server log.',
  },
  store_disk_error: {
    status: 503,
    section: 'cli.md#command-line',
    exit: 3,
    message: 'The disk answered a write to the store with an input/output error; nothing of it was applied.',
    fix: 'Check the disk of the data directory (dmesg, SMART); run the command again once it answers.',
  },
  store_conflict: {
    status: 503,
    section: 'cli.md#command-line',
    exit: 3,
    message: 'A write to the store kept conflicting with concurrent writers; nothing of it was applied.',
    fix: 'Run the command again.',
  },
  store_unsupported: {
    status: 503,
    section: 'cli.md#command-line',
    exit: 3,
    message: 'The store backend does not offer this operation.',
    fix: 'On PostgreSQL, back up with pg_dump instead of svc backup.',
  },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorType = keyof typeof catalogue;

export const errorTypes = Object.keys(catalogue) as ErrorType[];

export function entryOf(type: ErrorType): CatalogueEntry {
  return catalogue[type];
}

/** The catalogue's fix for `type`, or undefined for a type outside it. */
export function fixOf(type: string): string | undefined {
  return Object.hasOwn(catalogue, type) ? catalogue[type as ErrorType].fix : undefined;
}

export function docsUrl(baseUrl: string, type: ErrorType): string {
  return `${baseUrl}/docs/errors#${type}`;
}
