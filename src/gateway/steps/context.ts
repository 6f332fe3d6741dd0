import type { Readable } from 'node:stream';
import type { Clock } from '../../lib/clock.js';
import type { IdSource } from '../../lib/ids.js';
import type { Upstream } from '../../lib/upstream.js';
import type { GatewayModel, GatewayProvider, GatewaySettings, PolicyProfile } from '../../settings/schema.js';
import type { Store } from '../../store/index.js';
import type { WorkspaceGatewayRecord } from '../records.js';
import type { KeyRecord } from '../../keys/records.js';
import type { DeploymentHealth } from '../deployments.js';
import type { Admission, Budgets, Reservation } from '../budgets.js';
import type { CacheSlot, ResponseCache } from '../cache.js';
import type { CallLog } from '../calls.js';
import type { DlpKind } from '../dlp.js';
import type { LimitHold, Limits } from '../limits.js';
import type { AttemptResult, Shape } from '../failover.js';
import type { Steering } from '../steering.js';
import type { TokenCounter } from '../tokens.js';

/**
 * What the gateway's steps share: the request (`GatewayRequest`), what lives as long as the
 * gateway (`GatewayEnv`), and what one request learns on its way (`GatewayContext`). Each step
 * reads and writes only the fields that steps/index.ts lists for it. A field a later step fills
 * starts empty (never undefined), so a step tested alone sees a well-formed context.
 */
type Json = Record<string, unknown>;

/**
 * The route a request came by: the two chat shapes; POST /v1/responses, POST /v1/embeddings and
 * POST /v1/messages/count_tokens (each a capability of the vendors' adapters: forward.ts,
 * responses/attempt.ts).
 */
export type RouteShape = Shape | 'responses' | 'embeddings' | 'count_tokens';

export interface GatewayRequest {
  shape: RouteShape;
  body: Json;
  key: KeyRecord;
  headers: Record<string, string | string[] | undefined>;
  traceparent: string;
  signal: AbortSignal;
  startedAt: number;
  /** Filled as soon as each is known, so that a refusal carries them too. */
  answerHeaders?: Record<string, string>;
}

export interface GatewayAnswer {
  status: number;
  headers: Record<string, string>;
  json?: Json;
  stream?: Readable;
}

/** Emits an outbound event that is not a ledger record, once per key (webhooks/service.ts `advise`). */
export type Advise = (wid: string, type: 'budget.advisory', onceKey: string, data: Record<string, unknown>) => void;

/** What the steps use that outlives a request: made once, in service.ts. */
/** A plan's allowances that bound model traffic: people in the workspace, model requests a month. */
export interface GatewayAllowances {
  people: number | null;
  monthlyRequests: number | null;
}

export interface GatewayEnv {
  store: Store;
  clock: Clock;
  ids: IdSource;
  settings: GatewaySettings;
  calls: CallLog;
  budgets: Budgets;
  limits: Limits;
  cache: ResponseCache;
  health: DeploymentHealth;
  providers: ReadonlyMap<string, GatewayProvider>;
  profiles: ReadonlyMap<string, PolicyProfile>;
  catalogue: ReadonlyMap<string, GatewayModel>;
  upstreamOf(providerId: string): Upstream;
  /** Counts prompts' tokens off the event loop (tokens.ts). */
  tokens: TokenCounter;
  /**
   * The plan's allowances the gateway checks (the plans domain; they read the store, so they may
   * answer later): read once per request (plan.ts `allowancesOf`). null: unlimited.
   */
  allowances(wid: string): GatewayAllowances | Promise<GatewayAllowances>;
  seats: { graceDays: number };
  advise?: Advise | undefined;
}

/**
 * How the upstream step ended (exhausted: no model answered; with the shortest wait a vendor named
 * beyond the deadline, and whether a vendor throttled); the accounting step answers from it.
 */
export type Outcome =
  | { kind: 'exhausted'; retryAfterMs?: number; throttled?: boolean }
  | { kind: 'answered'; model: GatewayModel; result: Exclude<AttemptResult, { kind: 'failed' }> };

export interface GatewayContext {
  readonly req: GatewayRequest;
  readonly key: KeyRecord;
  readonly body: Json;
  readonly wid: string;
  readonly nowMs: number;
  readonly at: string;
  readonly callId: string;
  /** The answer's headers, refusals included. */
  readonly headers: Record<string, string>;
  /** The prompt's text, read once (for the classifier and the budget estimate). */
  prompt(): string;

  // classify
  steering: Steering;
  taskId: string;
  sessionId: string;
  profile: PolicyProfile | null;
  own: WorkspaceGatewayRecord | undefined;
  enforcement: 'enforce' | 'shadow';
  taskClass: string | null;

  // route
  requested: string | null;
  wouldRouteTo: string | null;
  candidates: GatewayModel[];

  // data loss
  redacted: Partial<Record<DlpKind, number>>;

  // limit
  /** The request's tokens counted against its limits, settled by its call record. */
  limitHold: LimitHold | null;

  // budget
  admission: Admission;

  // cache
  /** Where a missed answer is kept (null: the cache does not apply). */
  cacheSlot: CacheSlot | null;
  cacheState: 'hit' | 'miss' | null;

  // upstream
  reservation: Reservation | null;
  attempted: string[];
  outcome: Outcome;
}

/**
 * One step: returns an answer to end the request, nothing to go on, or throws an AppError to
 * refuse. A step that reads the store is asynchronous (the store answers through promises); the
 * runner awaits every step, in order.
 */
export interface SyncStep {
  readonly name: string;
  run(ctx: GatewayContext, env: GatewayEnv): GatewayAnswer | void;
}

export interface AsyncStep {
  readonly name: string;
  run(ctx: GatewayContext, env: GatewayEnv): Promise<GatewayAnswer | void>;
}

/**
 * A step after the answer: it runs once a step answered (and only then), and may replace the
 * answer (the response cache keeps a missed answer as it is written).
 */
export interface AfterStep {
  readonly name: string;
  after(ctx: GatewayContext, env: GatewayEnv, answer: GatewayAnswer): GatewayAnswer;
}

/** A step that checks or answers. */
export type CheckStep = SyncStep | AsyncStep;
export type Step = CheckStep | AfterStep;
