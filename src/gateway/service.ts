import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { Logger } from '../lib/log.js';
import { createUpstream, type Upstream } from '../lib/upstream.js';
import type { DataLossMode, Enforcement, GatewaySettings } from '../settings/schema.js';
import type { Store } from '../store/index.js';
import { createResponseCache } from './cache.js';
import { createLimits } from './limits.js';
import { createDeploymentHealth, type DeploymentHealth } from './deployments.js';
import type { Ledger } from '../ledger/service.js';
import type { Budgets } from './budgets.js';
import type { CallLog, CallQueue } from './calls.js';
import { createRefusalLog, type RefusalQueue } from './refusals.js';
import type { Advise, GatewayAnswer, GatewayEnv, GatewayRequest, Step } from './steps/context.js';
import { refusalEvent } from './steps/evidence.js';
import { createContext, runSteps, stepsFor } from './steps/index.js';
import { createTokenCounter, loadTokenizer, tokenizerReady } from './tokens.js';
import { refuseIfStopped } from './steps/kill-switch.js';
import { gatewayRepo } from './repo.js';

export type { Advise, GatewayAnswer, GatewayRequest } from './steps/context.js';

/** The refusals a client may send again as they are, after the retry-after they carry. */
const RETRYABLE = new Set(['rate_limited', 'upstream_rate_limited']);

/**
 * `x-should-retry` on every refusal of a model route, which the OpenAI and Anthropic SDKs obey
 * over their own rule (they retry 408, 409, 429 and 5xx, three calls by default): `true` for a
 * rate limit (ours or the vendors', with its retry-after), `false` for every other (a 502 means
 * every model and deployment was already tried, and the failover rule retried what could be).
 */
function shouldRetry(headers: Record<string, string>, err: unknown): void {
  if (err instanceof AppError) headers['x-should-retry'] = RETRYABLE.has(err.type) ? 'true' : 'false';
}

/** A workspace's own gateway settings over the deployment's (the console's gateway page). */
export interface WorkspaceGatewaySettings {
  enforcement: Enforcement;
  dataLoss: DataLossMode;
  /** When the workspace last changed them, and who (null: never, the deployment's hold). */
  updatedAt: string | null;
  updatedBy: string | null;
}

/**
 * The model gateway (docs/gateway.md): what lives as long as the gateway (upstream pools, circuit
 * breakers, the refusal evidence queue) and the request path, whose steps, in order, are
 * steps/index.ts. Also the workspace's own gateway settings (console).
 */
export interface Gateway {
  /** Each deployment's circuit, cool-down and observed latency, in this process. */
  readonly health: DeploymentHealth;
  /**
   * The gateway's enforcement point alone, for drills: whether a model call with a key of this
   * agent would be let past the standing check (the first step of every call), without a call.
   * Reads the agent's standing and "stop every agent"; writes nothing.
   */
  admitsAgent(wid: string, agentId: string): Promise<{ admitted: true } | { admitted: false; type: string }>;
  /**
   * One model request through the steps for its route shape, in order: an answer, or the
   * refusal thrown as its step raised it (with `x-should-retry`, and the `evidenceRecord` of
   * the refusal's ledger record when it is evidence). Writes what the steps write: counts,
   * reservations, call records, cache entries, refusal records.
   */
  handle(req: GatewayRequest): Promise<GatewayAnswer>;
  /** The bounded queues' bounds, and what this workspace lost to them (GET /v1/admin/upstreams). */
  queues(wid: string): { calls: CallQueue; refusals: RefusalQueue };
  /** The workspace's own settings (console), over the deployment's defaults. */
  settingsOf(wid: string): Promise<WorkspaceGatewaySettings>;
  /**
   * Changes the workspace's own settings and appends `gateway.settings_updated`, in one write;
   * answers the settings now.
   */
  configure(
    wid: string,
    change: { enforcement?: Enforcement; dataLoss?: DataLossMode },
    actor: string,
  ): Promise<WorkspaceGatewaySettings>;
  /**
   * Closes the upstream pools and the tokenizer's thread, writes what the queues hold, and signs
   * a ledger checkpoint when refusal records were written.
   */
  close(): Promise<void>;
}

export interface GatewayDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  log: Logger;
  settings: GatewaySettings;
  allowances: GatewayEnv['allowances'];
  seats: { graceDays: number };
  calls: CallLog;
  budgets: Budgets;
  advise?: Advise;
}

export function createGateway(deps: GatewayDeps): Gateway {
  const { store, clock, ids, settings, calls } = deps;
  const repo = gatewayRepo(store);
  const providers = new Map(settings.providers.map((p) => [p.id, p]));
  const upstreams = new Map<string, Upstream>();
  const upstreamOf = (providerId: string): Upstream => {
    let u = upstreams.get(providerId);
    if (!u) {
      const p = providers.get(providerId)!;
      u = createUpstream(p.baseUrl, {
        connections: p.connections,
        connectTimeoutMs: settings.connectTimeoutMs,
        headersTimeoutMs: settings.headersTimeoutMs,
        bodyTimeoutMs: settings.bodyTimeoutMs,
      });
      upstreams.set(providerId, u);
    }
    return u;
  };
  const health = createDeploymentHealth({ ...settings.breaker, now: () => clock.now(), models: settings.models });
  const limits = createLimits({ store, clock, log: deps.log, settings });
  const cache = createResponseCache({ store, clock, log: deps.log });
  const tokens = createTokenCounter({
    onFailure: (reason) => deps.log.warn({ reason }, 'long prompts are estimated or counted in slices'),
  });
  const env: GatewayEnv = {
    store,
    clock,
    ids,
    settings,
    calls,
    budgets: deps.budgets,
    limits,
    cache,
    health,
    providers,
    profiles: new Map(settings.policyProfiles.map((p) => [p.id, p])),
    catalogue: new Map(settings.models.map((m) => [m.id, m])),
    upstreamOf,
    tokens,
    allowances: deps.allowances,
    seats: deps.seats,
    advise: deps.advise,
  };
  const refusals = createRefusalLog({ store, ledger: deps.ledger, ids, clock, log: deps.log });
  // The tokenizer's tables load off the request path (tokens.ts), when there are models to call.
  // Its thread, for long prompts, starts then too.
  if (settings.models.length > 0) {
    void loadTokenizer().then((err) => {
      if (err) deps.log.error({ err }, 'the tokenizer could not be loaded; tokens are estimated at four characters');
    });
    tokens.warm();
  }

  return {
    health,

    async admitsAgent(wid, agentId) {
      try {
        await refuseIfStopped(store, { workspaceId: wid, agentId });
        return { admitted: true };
      } catch (err) {
        return { admitted: false, type: (err as AppError).type };
      }
    },

    async handle(req) {
      // Once, for the first requests after start: the steps count tokens synchronously.
      if (!tokenizerReady()) await loadTokenizer();
      const ctx = createContext(req, env);
      return runSteps(
        ctx,
        env,
        async (err: unknown, step: Step) => {
          // Refused after its limits counted it: the request used no tokens (its reservation
          // the runner released).
          ctx.limitHold?.settle(0);
          shouldRetry(ctx.headers, err);
          const event = refusalEvent(ctx, err, step.name);
          if (!event) return;
          const id = await refusals.record(event);
          if (id) (err as AppError).details.evidenceRecord = id;
        },
        stepsFor(req.shape),
      );
    },

    queues(wid) {
      return { calls: calls.queueOf(wid), refusals: refusals.queueOf(wid) };
    },

    async settingsOf(wid) {
      const own = await repo.settingsOf(wid);
      return {
        enforcement: own?.enforcement ?? settings.enforcement,
        dataLoss: own?.dataLoss ?? settings.dataLoss,
        updatedAt: own?.updatedAt ?? null,
        updatedBy: own?.updatedBy ?? null,
      };
    },

    async configure(wid, change, actor) {
      await store.write(async () => {
        const current = await repo.settingsOf(wid);
        await repo.putSettings(wid, {
          ...current,
          ...change,
          updatedAt: isoAt(clock.now()),
          updatedBy: actor,
        });
        await deps.ledger.record({
          workspaceId: wid,
          actor,
          kind: 'gateway.settings_updated',
          subject: wid,
          data: { ...change },
        });
      });
      return this.settingsOf(wid);
    },

    async close(): Promise<void> {
      await Promise.all([...upstreams.values()].map((u) => u.close()));
      await tokens.close();
      await calls.flush();
      await limits.flush();
      await cache.flush();
      await refusals.flush();
      // Refusal records written since the server's last checkpoint (it signs one as it stops,
      // before this) get one too. Only a process that served the gateway wrote any.
      if (refusals.stats().written > 0) await deps.ledger.checkpointAll();
    },
  };
}
