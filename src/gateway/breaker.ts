/**
 * Per-deployment health (deployments.ts names them), in this process: a circuit breaker and the observed latency.
 * Rules:
 * - `failures` consecutive failures (connection error, timeout, 429, 5xx) open a circuit:
 *   for `cooldownMs` it is skipped, then one request may try it (half-open); a success closes it.
 * - When every candidate's circuit is open, the one open longest is tried, so that an outage of
 *   everything recovers without waiting for each cooldown.
 * - Latency is an exponentially weighted mean of the time to the upstream's headers.
 * Kept in memory, per process; reads and writes no store.
 */
export interface ModelHealth {
  /** Whether one request may try it now: a closed circuit, or the one trial after the cooldown. */
  allows(id: string): boolean;
  /** The candidates to try, in order: closed circuits, and open ones whose cooldown ended (one trial each). */
  admit<T extends { id: string }>(models: readonly T[]): T[];
  /** A success: closes the circuit, and adds the time to headers to the latency. */
  success(id: string, latencyMs: number): void;
  /** A failure: `failures` in a row open the circuit. */
  failure(id: string): void;
  /** The observed latency (undefined until one was measured). */
  latencyMs(id: string): number | undefined;
  /** When the circuit opened (null: closed or never seen). */
  openedAt(id: string): number | null;
  /** Whether the circuit is open. */
  open(id: string): boolean;
}

export interface ModelHealthOptions {
  failures: number;
  cooldownMs: number;
  now: () => number;
}

export function createModelHealth(options: ModelHealthOptions): ModelHealth {
  const state = new Map<string, { failures: number; openedAt: number | null; trial: boolean; latencyMs?: number }>();
  const of = (id: string) => {
    let s = state.get(id);
    if (!s) state.set(id, (s = { failures: 0, openedAt: null, trial: false }));
    return s;
  };
  /** Whether one request may try it now: a closed circuit, or the one trial after the cooldown. */
  const allows = (id: string): boolean => {
    const s = of(id);
    if (s.openedAt === null) return true;
    if (options.now() - s.openedAt >= options.cooldownMs && !s.trial) {
      s.trial = true;
      return true;
    }
    return false;
  };
  return {
    allows,
    admit(models) {
      const out = models.filter((m) => allows(m.id));
      if (out.length > 0 || models.length === 0) return out;
      const oldest = [...models].sort((a, b) => (of(a.id).openedAt ?? 0) - (of(b.id).openedAt ?? 0))[0]!;
      return [oldest];
    },
    success(id, latencyMs) {
      const s = of(id);
      s.failures = 0;
      s.openedAt = null;
      s.trial = false;
      s.latencyMs = s.latencyMs === undefined ? latencyMs : s.latencyMs * 0.8 + latencyMs * 0.2;
    },
    failure(id) {
      const s = of(id);
      s.failures += 1;
      s.trial = false;
      if (s.failures >= options.failures) s.openedAt = options.now();
    },
    latencyMs(id) {
      return state.get(id)?.latencyMs;
    },
    openedAt(id) {
      return state.get(id)?.openedAt ?? null;
    },
    open(id) {
      return state.get(id)?.openedAt != null;
    },
  };
}
