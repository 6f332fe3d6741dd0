import type { GatewayDeployment, GatewayModel, PolicyProfile } from '../settings/schema.js';
import { createModelHealth, type ModelHealthOptions } from './breaker.js';

/**
 * Where a catalogue model is served from (the catalogue's `deployments`), and the health of each place.
 * Rules:
 * - Every deployment has its own circuit (breaker.ts) and observed latency; a model's circuit is
 *   open when every one of its deployments' is, and its latency is the mean of theirs (routing
 *   orders by it).
 * - A key's policy profile that names providers keeps to the deployments on them.
 * - Order for one request: the deployments whose circuits admit them; the first by smooth
 *   weighted round robin (per model, in this process: over any run of sum-of-weights requests
 *   each deployment leads exactly its weight's share), then the rest by weight, then catalogue
 *   order. No randomness, so a test can count it.
 * - A deployment that answered 429 or 5xx with `retry-after` is skipped by every request until
 *   then (a vendor's own cool-down), like an open circuit.
 * - A request tries a model's deployments in that order, on to the next after a failure, by the
 *   one failover rule (failover.ts: what a failure is, the waits, the backoff, the fallbacks).
 * - When no deployment of any candidate model is admitted, the one whose circuit opened (or
 *   cool-down started) longest ago is tried, so that an outage of everything recovers.
 *
 * Why not a resilience package (cockatiel, opossum): their circuit breakers read `Date.now()` and
 * their retries sleep on `setTimeout`, with no clock to inject, and they retry one function where
 * the gateway moves on to another deployment; tests here move an injected clock instead.
 */
export interface Deployment extends GatewayDeployment {
  /** `model/provider/upstreamModel`: the circuit's name. */
  key: string;
  modelId: string;
}

export interface Planned {
  model: GatewayModel;
  deployments: Deployment[];
}

export const deploymentKey = (modelId: string, d: GatewayDeployment): string =>
  `${modelId}/${d.provider}/${d.upstreamModel}`;

/** A deployment's state as GET /v1/admin/upstreams shows it. */
export interface DeploymentState {
  provider: string;
  upstreamModel: string;
  weight: number;
  circuit: 'open' | 'closed';
  /** Until when a vendor's retry-after keeps it out (null: not cooling). */
  coolingUntil: string | null;
  observedLatencyMs: number | null;
}

/**
 * Where each request goes among a model's deployments, and their health in this process (the
 * rules above). Kept in memory, per process; reads and writes no store.
 */
export interface DeploymentHealth {
  /** The candidates with the deployments each may try, in order; models left with none are dropped. */
  plan(models: readonly GatewayModel[], profile: PolicyProfile | null): Planned[];
  /** A success of the deployment: its cool-down ends, its circuit closes, its latency counts. */
  success(d: Deployment, latencyMs: number): void;
  /** A failure of the deployment; `retryAfterMs` (from the vendor) keeps it out until then. */
  failure(d: Deployment, retryAfterMs?: number): void;
  /** Forgets a deployment's cool-down (the request waited it out itself). */
  cooled(d: Deployment): void;
  /** The model's observed latency: the mean of its deployments' (undefined until one was measured). */
  latencyMs(modelId: string): number | undefined;
  /** Whether every deployment of the model has its circuit open. */
  open(modelId: string): boolean;
  /** Each deployment's circuit and latency (GET /v1/admin/upstreams). */
  deployments(m: GatewayModel): DeploymentState[];
}

export interface DeploymentHealthOptions extends ModelHealthOptions {
  models: readonly GatewayModel[];
}

export function createDeploymentHealth(options: DeploymentHealthOptions): DeploymentHealth {
  const breaker = createModelHealth(options);
  const catalogue = new Map(options.models.map((m) => [m.id, m]));
  /** Smooth weighted round robin's running weights, per deployment key. */
  const current = new Map<string, number>();
  /** A vendor's retry-after, per deployment key: skipped until then. */
  const coolUntil = new Map<string, number>();

  const deploymentsOf = (m: GatewayModel): Deployment[] =>
    m.deployments.map((d) => ({ ...d, key: deploymentKey(m.id, d), modelId: m.id }));

  const cooling = (key: string, now: number) => (coolUntil.get(key) ?? 0) > now;

  /** The deployments in the order to try them (smooth weighted round robin picks the first). */
  const order = (ds: Deployment[]): Deployment[] => {
    if (ds.length <= 1) return ds;
    const total = ds.reduce((n, d) => n + d.weight, 0);
    let best: Deployment | null = null;
    for (const d of ds) {
      const w = (current.get(d.key) ?? 0) + d.weight;
      current.set(d.key, w);
      if (!best || w > current.get(best.key)!) best = d;
    }
    current.set(best!.key, current.get(best!.key)! - total);
    const rest = ds.filter((d) => d !== best).sort((a, b) => b.weight - a.weight);
    return [best!, ...rest];
  };

  return {
    plan(models, profile) {
      const now = options.now();
      const allowed = (d: Deployment) => !profile?.providers || profile.providers.includes(d.provider);
      const all = models.map((model) => ({ model, deployments: deploymentsOf(model).filter(allowed) }));
      const planned = all
        .map(({ model, deployments }) => ({
          model,
          deployments: order(deployments.filter((d) => !cooling(d.key, now) && breaker.allows(d.key))),
        }))
        .filter((p) => p.deployments.length > 0);
      if (planned.length > 0) return planned;
      const every = all.flatMap((p) => p.deployments.map((d) => ({ model: p.model, d })));
      if (every.length === 0) return [];
      const since = (key: string) => Math.min(breaker.openedAt(key) ?? Infinity, coolUntil.get(key) ?? Infinity);
      const oldest = every.sort((a, b) => since(a.d.key) - since(b.d.key))[0]!;
      return [{ model: oldest.model, deployments: [oldest.d] }];
    },
    success(d, latencyMs) {
      coolUntil.delete(d.key);
      breaker.success(d.key, latencyMs);
    },
    failure(d, retryAfterMs) {
      breaker.failure(d.key);
      if (retryAfterMs !== undefined && retryAfterMs > 0) coolUntil.set(d.key, options.now() + retryAfterMs);
    },
    cooled(d) {
      coolUntil.delete(d.key);
    },
    latencyMs(modelId) {
      const seen = keysOf(modelId)
        .map((k) => breaker.latencyMs(k))
        .filter((v): v is number => v !== undefined);
      return seen.length === 0 ? undefined : seen.reduce((a, b) => a + b, 0) / seen.length;
    },
    open(modelId) {
      const keys = keysOf(modelId);
      return keys.length > 0 && keys.every((k) => breaker.open(k));
    },
    deployments(m) {
      const now = options.now();
      return deploymentsOf(m).map((d) => ({
        provider: d.provider,
        upstreamModel: d.upstreamModel,
        weight: d.weight,
        circuit: breaker.open(d.key) ? ('open' as const) : ('closed' as const),
        coolingUntil: cooling(d.key, now) ? new Date(coolUntil.get(d.key)!).toISOString() : null,
        observedLatencyMs: breaker.latencyMs(d.key) ?? null,
      }));
    },
  };
  function keysOf(modelId: string): string[] {
    const m = catalogue.get(modelId);
    return m ? m.deployments.map((d) => deploymentKey(m.id, d)) : [];
  }
}
