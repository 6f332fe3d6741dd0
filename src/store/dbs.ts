/**
 * The shapes of the records the store holds (tables.ts lists the tables and their key layouts).
 * Ids are the prefixed ids of API.md.
 * A record's shape is owned by its domain (people/, keys/, ...); the store sees only values.
 * Which tables are swept, and after what window or retention: retention/policy.ts.
 */

export interface MetaValue {
  [k: string]: unknown;
}

export interface WorkspaceRecord {
  id: string;
  name: string;
  createdAt: string;
}

export interface UserRecord {
  id: string;
  email: string;
  name: string;
  /** argon2id PHC string; never the password. */
  passwordHash: string;
  /** Set for a password someone else chose (the first start's one-time password). */
  mustChangePassword?: boolean;
  /**
   * Two-factor (RFC 6238), absent when never enrolled. `sealed`: the secret under AES-256-GCM
   * (people/two-factor.ts), never in clear; `confirmedAt` null while enrolment awaits its first
   * code (not yet asked at sign-in); `lastStep`: the last time step a code was accepted at.
   */
  totp?: { sealed: string; confirmedAt: string | null; lastStep?: number };
  createdAt: string;
}

export type Role = 'owner' | 'admin' | 'member' | 'analyst' | 'auditor';

export interface MemberRecord {
  workspaceId: string;
  userId: string;
  role: Role;
  addedAt: string;
}

export interface SessionRecord {
  userId: string;
  createdAt: string;
  expiresAt: string;
}

/** Why an agent is stopped, and by whom (API.md 2). An agent with any hold is stopped. */
export interface Hold {
  hold: string;
  reason: string;
  by: string;
  at: string;
}

export interface AgentRecord {
  id: string;
  workspaceId: string;
  name: string;
  actsFor: string | null;
  tags: string[];
  /** Schema 4; absent in older records means none. */
  holds?: Hold[];
  /** The blueprint it was registered from (bp_ id); absent or null for none. */
  blueprint?: string | null;
  createdAt: string;
  removedAt: string | null;
}

/** A mandate rule (API.md 2, decided there). */
export interface MandateRule {
  id: string;
  actions: string[];
  merchants?: string[];
  domains?: string[];
  currencies?: string[];
  maxAmount?: number;
  periodLimit?: { amount: number; period: 'day' | 'week' | 'month' };
  approval?: { above: number; approvers?: string[]; count?: 1 | 2; separationOfDuties?: boolean };
}

export interface MandateRecord {
  workspaceId: string;
  agentId: string;
  rules: MandateRule[];
  updatedAt: string;
  updatedBy: string;
}

export interface TemplateRecord {
  id: string;
  workspaceId: string;
  name: string;
  rules: MandateRule[];
  createdAt: string;
}

/** An agent blueprint (API.md 2): tags and templates a registered agent starts with. */
export interface BlueprintRecord {
  id: string;
  workspaceId: string;
  name: string;
  tags: string[];
  /** tpl_ ids, in order: their rules become the mandate. */
  templates: string[];
  createdAt: string;
  createdBy: string;
}

export type ActionStatus = 'allowed' | 'denied' | 'pending_approval' | 'settled';
export type Decision = 'allow' | 'deny' | 'review';

/** What an allowed action adds to its rule's usage (mandates/usage.ts), so a settlement can release or replace it. */
export interface PeriodCharge {
  /** The rule's cover, hashed: usage follows what a rule covers, not its id. */
  usageKey: string;
  currency: string;
  /** The UTC day the amount counts on. */
  day: string;
  amount: number;
}

export interface ActionRecord {
  id: string;
  workspaceId: string;
  agentId: string;
  type: string;
  summary: string;
  payment: { amount: number; currency: string; merchant?: string } | null;
  target: { domain?: string } | null;
  decision: Decision;
  signals: string[];
  reason: string;
  status: ActionStatus;
  ruleId: string | null;
  approvalId: string | null;
  receipt: string | null;
  evidenceRecord: string | null;
  settlement: { status: 'completed' | 'failed' | 'cancelled'; amount: number | null; at: string } | null;
  charge: PeriodCharge | null;
  sessionId: string | null;
  idempotencyKey: string | null;
  metadata: Record<string, unknown> | null;
  createdAt: string;
}

export interface IdempotencyRecord {
  actionId: string;
  /** SHA-256 of the canonical request, to tell a retry from a different request. */
  fingerprint: string;
  expiresAt: string;
}

export interface ApprovalRecord {
  id: string;
  workspaceId: string;
  actionId: string;
  agentId: string;
  status: 'pending' | 'approved' | 'denied' | 'expired';
  approvers: string[] | null;
  approvals: Array<{ by: string; at: string; note: string | null }>;
  requiredApprovals: number;
  separationOfDuties: boolean;
  createdAt: string;
  expiresAt: string;
  /** Who denied it and why, or why it turned into a deny (limits used meanwhile, expiry). */
  decidedBy?: string | null;
  reason?: string | null;
  /** Whom the agent acted for when the action asked: separation of duties holds against them. */
  requestedFor?: string | null;
  /** When it stopped waiting (approved, denied or expired); absent while pending and on older records. */
  decidedAt?: string;
  /** A bulk freeze past the ceiling, waiting for a person (actionId and agentId are then ''). */
  /** `all`: the freeze named every agent, so approving it also turns on "stop every agent". */
  freeze?: { agentIds: string[]; reason: string; requestedBy: string; tokenId: string; all?: boolean };
}

/** What a drill found, kept for the scorecard (the whole report is also in the ledger). */
export interface DrillReportRecord {
  id: string;
  tokenId: string;
  passed: boolean;
  points: Array<{ point: string; passed: boolean; timeToEffectMs: number | null }>;
  startedAt: string;
  finishedAt: string;
}

/** One model call through the gateway (issue 6), written off the hot path. */
export interface CallRecord {
  id: string;
  workspaceId: string;
  at: string;
  keyId: string;
  principal: string | null;
  team: string | null;
  agentId: string | null;
  taskId: string;
  taskClass: string;
  sessionId: string;
  shape: 'openai' | 'anthropic' | 'responses' | 'embeddings' | 'count_tokens';
  stream: boolean;
  dryRun: boolean;
  enforcement: string;
  requestedModel: string | null;
  /** The catalogue model that served it (null: none did). */
  model: string | null;
  provider: string | null;
  /** The upstream model of the deployment that answered (absent in records from before deployments). */
  upstreamModel?: string | null;
  attemptedModels: string[];
  inputTokens: number;
  outputTokens: number;
  costMicros: number;
  latencyMs: number;
  overheadMicros: number;
  outcome: 'ok' | 'dry_run' | 'upstream_failure' | 'upstream_error' | 'cut' | 'cancelled' | 'sensitive_data_blocked';
  /** What data-loss screening found in the answer's text, by kind (redacted or blocked); absent: nothing. */
  answerFindings?: Partial<Record<string, number>>;
  /** Whether the response cache answered (hit, at zero cost) or missed; absent when it did not apply. */
  cache?: 'hit' | 'miss';
  budgetId: string | null;
}

/** A workspace's own gateway settings, over the deployment's (absent fields: the deployment's). */
export interface WorkspaceGatewayRecord {
  enforcement?: 'enforce' | 'shadow';
  dataLoss?: 'off' | 'redact' | 'block';
  updatedAt: string;
  updatedBy: string;
}

/** An OAuth client, registered dynamically (RFC 7591; SPEC.md 2.4). */
export interface OAuthClientRecord {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  authMethod: 'none' | 'client_secret_post' | 'client_secret_basic';
  /** SHA-256 of the client secret (confidential clients only). */
  secretHash: string | null;
  createdAt: string;
}

/**
 * An inbound integration's signing secrets (API.md 8), sealed with the master key: the current
 * one, and during a rotation the one before it until `retiresAt`.
 */
export type IntegrationKind = 'issuer' | 'stripe' | 'github' | 'slack' | 'chat-relay' | 'ssf';

export interface IntegrationRecord {
  kind: IntegrationKind;
  workspaceId: string;
  secrets: Array<{ sealed: string; createdAt: string; retiresAt: string | null }>;
  /** The kind's non-secret settings (API.md 8); absent in records older than them. */
  config?: Record<string, unknown>;
  /** The kind's secret settings (github's API `token`), each sealed like `secrets`; never answered. */
  sealedConfig?: Record<string, string>;
  updatedAt: string;
  updatedBy: string;
}

/** A deployment protection decision to report to GitHub (its deployment_callback_url), until sent or given up. */
export interface GithubCallbackRecord {
  id: string;
  workspaceId: string;
  /** The delivery decided (the ledger records' subject). */
  delivery: string;
  url: string;
  environment: string;
  state: 'approved' | 'rejected';
  comment: string;
  actionId: string | null;
  createdAt: string;
  nextAttemptMs: number;
  attempts: Array<{ at: string; status: number | null; error: string | null }>;
}

/** Who issued a card: the generic issuer or Stripe Issuing. Cards and charges are kept apart by it. */
export type CardProvider = 'issuer' | 'stripe';

/** A card of a provider mapped to an agent (null: unmapped). */
export interface CardRecord {
  provider: CardProvider;
  cardId: string;
  workspaceId: string;
  agentId: string | null;
  updatedAt: string;
  updatedBy: string;
}

/** A code-host (GitHub) account, usually a bot, mapped to the agent that acts through it (null: unmapped). */
export interface GithubBotRecord {
  /** The account's login as GitHub spells it (the key is its lower-case form: logins ignore case). */
  login: string;
  workspaceId: string;
  agentId: string | null;
  updatedAt: string;
  updatedBy: string;
}

/** A posted (or refunded) card charge as its provider reported it, and how it was reconciled. */
export interface ChargeRecord {
  provider: CardProvider;
  /** The provider's id of the charge's event (issuer) or transaction (Stripe `ipi_…`). */
  eventId: string;
  workspaceId: string;
  cardId: string;
  kind: 'posted' | 'refunded';
  amount: number;
  currency: string;
  merchant: { name: string; domain: string | null; mcc: string | null };
  createdAt: string;
  importedAt: string;
  /** The allowed action of the card's agent it matched; null: unmatched (flagged). */
  actionId: string | null;
  agentId: string | null;
}

/**
 * One subscription of a workspace as the operator's billing provider (Stripe) last reported it;
 * the workspace's plan is derived from all of them (plans/service.ts). None: the free plan.
 * `eventCreated` is the provider event's `created` (unix seconds): an older event never overwrites it.
 */
export interface PlanRecord {
  workspaceId: string;
  plan: string;
  status: string;
  subscriptionId: string;
  customerId: string | null;
  currentPeriodEnd: string | null;
  eventId: string;
  eventCreated: number;
  /** Stripe deleted the subscription: final, no later event revives it. */
  ended: boolean;
  lastPaymentFailedAt: string | null;
  updatedAt: string;
}

/** An outbound webhook endpoint (API.md 8); its signing secret sealed with the master key. */
export interface WebhookEndpointRecord {
  id: string;
  workspaceId: string;
  url: string;
  events: string[];
  secretSealed: string;
  createdAt: string;
  createdBy: string;
  /** Set when a delivery kept failing past the give-up time; nothing more is sent. */
  disabledAt: string | null;
}

/** One event for one endpoint, in the outbox until delivered or given up. */
export interface DeliveryRecord {
  id: string;
  workspaceId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  /** The exact bytes sent on every try (the signature covers them). */
  body: string;
  createdAt: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: Array<{ at: string; status: number | null; error: string | null; ms: number }>;
  nextAttemptAt: string | null;
}

/**
 * A button of an approval card sent to the chat relay, stored by the SHA-256 of its token (the
 * token itself is never stored): what a click on it decides, until the approval's expiry.
 */
export interface ChatButtonRecord {
  workspaceId: string;
  approvalId: string;
  decision: 'approve' | 'deny';
  expiresAt: string;
}

/** A chat user (of a platform) mapped by an owner or admin to a member of the workspace. */
export interface ChatUserRecord {
  platform: string;
  chatUserId: string;
  userId: string;
  updatedAt: string;
  updatedBy: string;
}

/** A person's MCP client connected to exactly one agent (SPEC.md 5.5). */
export interface OAuthConnectionRecord {
  id: string;
  workspaceId: string;
  clientId: string;
  clientName: string;
  agentId: string;
  userId: string;
  /** The granted scope (oauth/scopes.ts); absent on connections made before scopes: `svc:agent offline_access`. */
  scope?: string;
  createdAt: string;
  endedAt: string | null;
  endedWhy: string | null;
}

/** An authorization code, stored by its hash: single use, a few minutes. */
export interface OAuthCodeRecord {
  clientId: string;
  redirectUri: string;
  challenge: string;
  connectionId: string;
  workspaceId: string;
  expiresAt: string;
  usedAt: string | null;
}

/** An access (aat_) or refresh (art_) token, stored by its hash. */
export interface OAuthTokenRecord {
  kind: 'access' | 'refresh';
  connectionId: string;
  workspaceId: string;
  agentId: string;
  clientId: string;
  expiresAt: string | null;
  usedAt: string | null;
  /** A refresh token's access token (hash), which stops working when the refresh token is used. */
  pairedAccess: string | null;
  /** A used refresh token: the pair its use issued, sealed (oauth/grace.ts), served again until `until`. */
  grace?: { until: string; sealed: string } | null;
}

/** An upstream MCP server of a workspace, behind the proxy at /mcp (issue 7). */
export interface McpServerRecord {
  name: string;
  workspaceId: string;
  url: string;
  /** The bearer secret sent upstream, sealed with the master key (null: none). */
  secretSealed: string | null;
  /** Tools passed through; null: all. */
  allowTools: string[] | null;
  /** Tools keep their upstream names instead of <server>__<tool>. */
  unprefixed: boolean;
  createdAt: string;
  createdBy: string;
}

/** What an upstream tool tells an agent: its description and input schema, and their hash (mcp/pins.ts). */
export interface McpToolState {
  hash: string;
  description: string | null;
  inputSchema: Record<string, unknown>;
}

/**
 * An upstream tool's pin (issue 20): the state an owner or admin approved, and what the upstream
 * offers now when that differs (the tool is withheld until someone approves it).
 */
export interface McpToolPinRecord {
  workspaceId: string;
  server: string;
  tool: string;
  /** null: never approved (the tool appeared after the server was added). */
  approved: (McpToolState & { at: string; by: string }) | null;
  /** The upstream's current state when it is not the approved one; null when they agree. */
  changed: (McpToolState & { seenAt: string }) | null;
}

/** A model budget (API.md 6). */
export interface BudgetRecord {
  id: string;
  workspaceId: string;
  scope: { kind: 'workspace' | 'team' | 'principal' | 'key' | 'agent'; id: string };
  amountMicros: number;
  period: 'day' | 'week' | 'month';
  ladder: Array<{ at: number; step: 'nudge' | 'downgrade' | 'approval' | 'block' }>;
  createdAt: string;
  createdBy: string;
}

/**
 * What an admitted model request may still cost one budget, until its call settles (gateway/budgets.ts);
 * past `expiresAtMs` (a crashed process's) it no longer counts.
 */
export interface BudgetReservationRecord {
  micros: number;
  expiresAtMs: number;
}

/** A key's, team's, principal's or policy profile's model traffic limits (API.md 9; gateway/limits.ts). */
export interface RateLimits {
  requestsPerMinute?: number;
  tokensPerMinute?: number;
}

/** What one scope used in one minute (gateway/limits.ts). */
export interface RateWindowRecord {
  requests: number;
  tokens: number;
  /** Bumped by every write: a writer knows when the store shows its own write. */
  version: number;
}

/** A model answer kept for replay (gateway/cache.ts). */
export interface CachedAnswerRecord {
  expiresAtMs: number;
  model: string;
  provider: string;
  /** The vendor's JSON answer, or the SSE bytes (UTF-8) of a streamed one. */
  json: Record<string, unknown> | null;
  sse: string | null;
  inputTokens: number;
  outputTokens: number;
  storedAt: string;
}

/** "Stop every agent" in force for a workspace (absent: not in force). */
export interface StopAllRecord {
  reason: string;
  by: string;
  at: string;
}

/**
 * The head of a workspace's ledger: its size, and the compact range of its Merkle tree as of the
 * last checkpoint (the next checkpoint extends it with the leaf hashes stored since), so that an
 * append writes a small head.
 */
export interface LedgerHead {
  size: number;
  checkpointSize: number;
  checkpointFrontier: string[];
  /** The checkpoint origin line, fixed when the ledger starts: <host>/<wid>. */
  origin: string;
}

/** A ledger record exactly as hashed: the RFC 8785 bytes and their RFC 9162 leaf hash. */
export interface LedgerEntry {
  bytes: string;
  leaf: string;
}

export interface CheckpointRecord {
  size: number;
  /** The C2SP signed note. */
  note: string;
  at: string;
  /** The ledger key that signed it. */
  kid: string;
}

export type KeyScope = 'agent' | 'inference' | 'admin';

export interface KeyRecord {
  id: string;
  workspaceId: string;
  scope: KeyScope;
  name: string | null;
  principal: string | null;
  team: string | null;
  defaultTaskClass: string | null;
  policyProfile: string | null;
  agentId: string | null;
  /** Requests and tokens per minute (absent: none); API.md 9. */
  limits?: RateLimits | null;
  /** SHA-256 of the key value (base64url). */
  hash: string;
  createdAt: string;
  createdBy: string;
  revokedAt: string | null;
}

export type ServiceTokenScope = 'agents:read' | 'agents:write' | 'agents:freeze' | 'approvals:read' | 'evidence:read';

export interface ServiceTokenRecord {
  id: string;
  workspaceId: string;
  name: string;
  scopes: ServiceTokenScope[];
  ipAllow: string[];
  hash: string;
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
}

/** What a signing key signs: receipts, or the ledger's checkpoints (receipts/crypto.ts keeps the two apart). */
export type SigningKeyUse = 'receipt' | 'ledger';

/** A receipt or ledger signing key, its private half sealed (receipts/crypto.ts). */
export interface SigningKeyRecord {
  /** RFC 7638 JWK thumbprint (base64url, SHA-256) of the public JWK. */
  kid: string;
  use: SigningKeyUse;
  publicJwk: { kty: 'OKP'; crv: 'Ed25519'; x: string };
  /** base64url(iv(12) || ciphertext || tag(16)) of the PKCS#8 DER private key; see receipts/crypto.ts. */
  sealedPrivateKey: string;
  createdAt: string;
  /** No longer signs; still published and verifiable. */
  retiredAt: string | null;
  /** No longer published; online verification answers reason "revoked". */
  revokedAt: string | null;
}
