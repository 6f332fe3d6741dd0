import type { AgentRecord, StopAllRecord } from '../agents/records.js';
import type { AgentSigningKeyRecord } from '../agent-signing/records.js';
import type { Ap2MandateRecord, Ap2SettingsRecord, HolderKeyRecord } from '../ap2/records.js';
import type { ApprovalRecord } from '../approvals/records.js';
import type { BlueprintRecord } from '../blueprints/records.js';
import type { ChatButtonRecord, ChatUserRecord } from '../chat/records.js';
import type { DrillReportRecord } from '../drills/records.js';
import type { ActionRecord, IdempotencyRecord } from '../gate/records.js';
import type {
  BudgetRecord,
  BudgetReservationRecord,
  CachedAnswerRecord,
  CallRecord,
  RateWindowRecord,
  WorkspaceGatewayRecord,
} from '../gateway/records.js';
import type {
  CardProvider,
  CardRecord,
  ChargeRecord,
  GithubBotRecord,
  GithubCallbackRecord,
  IntegrationRecord,
} from '../integrations/records.js';
import type { KeyRecord } from '../keys/records.js';
import type {
  CheckpointRecord,
  CosignaturesRecord,
  LedgerEntry,
  LedgerHead,
  LedgerLease,
  WaitingEntry,
} from '../ledger/records.js';
import type { MandateRecord, TemplateRecord } from '../mandates/records.js';
import type { McpCredentialRecord, McpOAuthPendingRecord, McpServerRecord, McpToolPinRecord } from '../mcp/records.js';
import type {
  DeviceCodeRecord,
  OAuthClientRecord,
  OAuthCodeRecord,
  OAuthConnectionRecord,
  OAuthTokenRecord,
  PersonLoginRecord,
  PersonTokenRecord,
} from '../oauth/records.js';
import type { MemberRecord, Role, SessionRecord, UserRecord, WorkspaceRecord } from '../people/records.js';
import type { PlanRecord } from '../plans/records.js';
import type { SigningKeyRecord } from '../signing/records.js';
import type { ServiceTokenRecord } from '../service-tokens/records.js';
import type { SetupResourceRecord } from '../setup/records.js';
import type { DeliveryRecord, WebhookEndpointRecord } from '../webhooks/records.js';
import type { Table } from './types.js';

/**
 * The table registry: every table of the store, its key layout (in its comment) and the type of
 * its values, declared once. The name list (`tableNames`: LMDB's named databases, PostgreSQL's
 * `tbl` column) and the `Tables` types of the async interface (kv.ts) both derive from this one
 * object, so they cannot drift apart. Adding a table is adding one line here: neither backend
 * needs a migration for an empty table.
 *
 * A record's shape is owned by its domain, in that domain's records.ts (types only: the one import
 * of the store from above it, test/architecture/layers.test.ts). Which tables are swept, and after
 * what window or retention: retention/policy.ts.
 */

/** A table's declaration; `V` is only a type (nothing is stored in the object). */
export interface TableSpec<V> {
  readonly value?: V;
}

const table = <V>(): TableSpec<V> => Object.freeze({});

export const tableSpec = {
  /** 'schemaVersion' -> number; other store-wide values. */
  meta: table<unknown>(),
  /** wid -> workspace */
  workspaces: table<WorkspaceRecord>(),
  /** uid -> user */
  users: table<UserRecord>(),
  /** lower-cased email -> uid */
  usersByEmail: table<string>(),
  /** [wid, uid] -> membership */
  members: table<MemberRecord>(),
  /** [uid, wid] -> role; the reverse of members (schema 2) */
  userWorkspaces: table<Role>(),
  /** session secret hash -> session */
  sessions: table<SessionRecord>(),
  /** [uid, session hash] -> expiresAt; a person's sessions, to end them together (schema 3) */
  sessionsByUser: table<string>(),
  /** [wid, aid] -> agent */
  agents: table<AgentRecord>(),
  /** [wid, keyId] -> key record (workspace and agent keys) */
  keys: table<KeyRecord>(),
  /** key hash -> the key record itself (a copy kept in step with `keys` in every write), so that
   * authenticating a key is one read */
  keysByHash: table<KeyRecord>(),
  /** [wid, tokId] -> service token record */
  serviceTokens: table<ServiceTokenRecord>(),
  /** token hash -> [wid, tokId] */
  serviceTokensByHash: table<[string, string]>(),
  /** [wid, aid] -> the agent's mandate (schema 4) */
  mandates: table<MandateRecord>(),
  /** wid -> the workspace's AP2 settings (trusted issuers) */
  ap2Settings: table<Ap2SettingsRecord>(),
  /** [wid, aid] -> the agent's AP2 holder key */
  ap2HolderKeys: table<HolderKeyRecord>(),
  /** [wid, aid, ap2Id] -> an imported AP2 open mandate */
  ap2Mandates: table<Ap2MandateRecord>(),
  /** [wid, SHA-256 of a key-binding JWT's nonce] -> until when (ms) it stays used */
  ap2Nonces: table<number>(),
  /** [wid, tplId] -> mandate template */
  templates: table<TemplateRecord>(),
  /** [wid, bpId] -> agent blueprint */
  blueprints: table<BlueprintRecord>(),
  /** [wid, actId] -> action */
  actions: table<ActionRecord>(),
  /** [wid, aid, idempotency key] -> the action it made (kept 24 hours) */
  idempotency: table<IdempotencyRecord>(),
  /** [wid, aid, usageKey, currency, day] -> minor units allowed or settled that day under that cover */
  periodUsage: table<number>(),
  /** [wid, aprId] -> approval */
  approvals: table<ApprovalRecord>(),
  /** [expiresAt, wid, aprId] -> true, for waiting approvals only: the expiry sweep's queue */
  pendingApprovals: table<true>(),
  /** [wid, tokenId] -> when that token last ran a drill in that workspace */
  drills: table<string>(),
  /** [wid, startedAt, tokenId] -> a drill's report (also a ledger record), for the scorecard */
  drillReports: table<DrillReportRecord>(),
  /** [wid, callId] -> a model call */
  calls: table<CallRecord>(),
  /** [wid, taskId] -> when the task's first call was made */
  tasks: table<string>(),
  /** [wid, 'YYYY-MM'] -> model requests made that month (the plan's allowance) */
  monthlyRequests: table<number>(),
  /** wid -> the workspace's gateway settings */
  workspaceGateway: table<WorkspaceGatewayRecord>(),
  /** wid -> since when the workspace has more people than the plan allows (absent: it has not) */
  seatOverage: table<string>(),
  /** clientId -> OAuth client */
  oauthClients: table<OAuthClientRecord>(),
  /** [wid, cnxId] -> OAuth connection */
  oauthConnections: table<OAuthConnectionRecord>(),
  /** code hash -> authorization code */
  oauthCodes: table<OAuthCodeRecord>(),
  /** token hash -> access or refresh token */
  oauthTokens: table<OAuthTokenRecord>(),
  /** consent nonce -> when its form expires: a signed consent form connects once */
  oauthConsentsUsed: table<string>(),
  /** device code hash -> a device authorization under way (RFC 8628) */
  deviceCodes: table<DeviceCodeRecord>(),
  /** user code (normalised) -> the device code hash it stands for, until the code expires */
  deviceUserCodes: table<{ hash: string; expiresAt: string }>(),
  /** [wid, lgnId] -> a person signed in to the command line */
  personLogins: table<PersonLoginRecord>(),
  /** token hash -> a person's command-line access or refresh token */
  personTokens: table<PersonTokenRecord>(),
  /** [wid, server name] -> upstream MCP server */
  mcpServers: table<McpServerRecord>(),
  /** [wid, server name, upstream tool name] -> the tool's pin */
  mcpToolPins: table<McpToolPinRecord>(),
  /** [wid, server name, holder (agent id or '*workspace'), kind] -> an upstream credential (secrets sealed) */
  mcpCredentials: table<McpCredentialRecord>(),
  /** SHA-256 (hex) of an upstream OAuth connection's state -> the connection under way (kept minutes) */
  mcpOAuthPending: table<McpOAuthPendingRecord>(),
  /** [wid, kind] -> inbound integration secrets */
  integrations: table<IntegrationRecord>(),
  /** [wid, provider, cardId] -> card mapping */
  cards: table<CardRecord>(),
  /** [wid, provider, cardId, eventId] -> imported charge */
  charges: table<ChargeRecord>(),
  /** [wid, lower-case login] -> code-host account mapping */
  githubBots: table<GithubBotRecord>(),
  /** [wid, subscriptionId] -> a subscription of the workspace from billing events (none: the free plan) */
  subscriptions: table<PlanRecord>(),
  /** [wid, actionId] -> the card an action was authorized through (cards.ts): only its charges settle it */
  cardActions: table<{ provider: CardProvider; cardId: string; eventId: string }>(),
  /** [wid, source, event id] -> the answer given to that delivery (a redelivery gets it again) */
  hookEvents: table<{ answer: Record<string, unknown>; at: string }>(),
  /** [scope, identifier] -> until when (ms) it stays used: signatures, `jti`s and button tokens accepted once */
  hookOnce: table<number>(),
  /** [wid, kind] -> inbound requests of that kind refused for the workspace (http/inbound.ts), across instances */
  integrationRefusals: table<number>(),
  /** SHA-256 (hex) of a button token -> what the button decides (chat approvals) */
  chatButtons: table<ChatButtonRecord>(),
  /** [wid, platform, chat user id] -> the member it is mapped to */
  chatUsers: table<ChatUserRecord>(),
  /** [wid, id] -> a decision still to be reported to GitHub (removed once sent or given up) */
  githubCallbacks: table<GithubCallbackRecord>(),
  /** [wid, whkId] -> outbound webhook endpoint */
  webhookEndpoints: table<WebhookEndpointRecord>(),
  /** [wid, whkId, dlvId] -> delivery and its attempts */
  deliveries: table<DeliveryRecord>(),
  /** [wid, event type, once key] -> the event id: events that are not ledger records, sent once each */
  webhookAdvised: table<string>(),
  /** [next attempt ms, wid, whkId, dlvId] -> 1: the outbox, in the order deliveries are due */
  outbox: table<number>(),
  /** [wid, budId] -> budget */
  budgets: table<BudgetRecord>(),
  /** [wid, budId, period start] -> micro-dollars spent in that period */
  budgetSpend: table<number>(),
  /** [wid, budId, period start, resId] -> what an admitted request may still cost it, until it settles or expires */
  budgetReservations: table<BudgetReservationRecord>(),
  /** [wid, scope kind, scope id, minute start ms] -> requests and tokens that scope used that minute */
  rateWindows: table<RateWindowRecord>(),
  /** [window end ms, scope, key] -> requests counted in that window by a rate limit (store/counters.ts;
   * on LMDB they live in a file of their own, counters-<boot>.mdb, never in this one) */
  rateCounters: table<number>(),
  /** [wid, SHA-256 of the canonical request] -> a cached model answer */
  responseCache: table<CachedAnswerRecord>(),
  /** [expires at ms, wid, hash] -> 1: the cache's entries in the order they expire, for pruning */
  responseCacheExpiry: table<number>(),
  /** wid -> "stop every agent", while in force */
  stopAll: table<StopAllRecord>(),
  /** kid -> receipt or ledger signing key (private half sealed with the master key) */
  signingKeys: table<SigningKeyRecord>(),
  /** [wid, aid, kid] -> an agent's key for signing its HTTP requests (private half sealed with the master key) */
  agentSigningKeys: table<AgentSigningKeyRecord>(),
  /** receipt jti -> first online verification time */
  receiptsSeen: table<string>(),
  /** receipt jti -> why it no longer stands (its action failed or was cancelled) */
  receiptsWithdrawn: table<{ at: string; reason: string }>(),
  /** kind ('keys' | 'integrations' | 'signingKeys') -> generation counter, bumped by every write of
   * the records of that kind, in the same transaction: what in-memory caches check (generations.ts) */
  generations: table<number>(),
  /** wid -> ledger head */
  ledgerHeads: table<LedgerHead>(),
  /** [wid, index] -> ledger record bytes and leaf hash */
  ledger: table<LedgerEntry>(),
  /** [wid, size] -> signed checkpoint */
  checkpoints: table<CheckpointRecord>(),
  /** [wid, size] -> the witnesses' cosignatures of that checkpoint */
  cosignatures: table<CosignaturesRecord>(),
  /** [wid, appendedAtMs, seq, evr id] -> a ledger record appended and not yet integrated */
  ledgerWaiting: table<WaitingEntry>(),
  /** 'integrator' -> the lease of the process that integrates waiting records */
  ledgerLeases: table<LedgerLease>(),
  /** [wid, section, name] -> what svc apply wrote from a workspace file (created by it, its secret's variable) */
  setupResources: table<SetupResourceRecord>(),
} as const;

export type TableName = keyof typeof tableSpec;
export type TableValue<N extends TableName> = (typeof tableSpec)[N] extends TableSpec<infer V> ? V : never;

/** Every table name, in declaration order. */
export const tableNames: readonly TableName[] = Object.freeze(Object.keys(tableSpec) as TableName[]);

/** Every table as the domains use it (types.ts: reads anywhere, put and remove inside a write). */
export type Tables = { readonly [N in TableName]: Table<TableValue<N>> };
