import type { CallRecord } from './records.js';
import type { CallLog } from './calls.js';

/**
 * Usage reports for admin keys: calls grouped by model, principal, team, agent, key or task
 * class over a time window, with tokens, cost, failures and mean latency.
 */
export type UsageBy = 'model' | 'principal' | 'team' | 'agent' | 'key' | 'taskClass';

const groupOf = (c: CallRecord, by: UsageBy): string => {
  switch (by) {
    case 'model':
      return c.model ?? '(none)';
    case 'principal':
      return c.principal ?? '(none)';
    case 'team':
      return c.team ?? '(none)';
    case 'agent':
      return c.agentId ?? '(none)';
    case 'key':
      return c.keyId;
    case 'taskClass':
      return c.taskClass;
  }
};

/**
 * Tokens summed over calls: inputTokens counts every prompt token, the vendor's prompt cache's
 * included, of which cacheReadTokens and cacheWriteTokens; outputTokens includes reasoningTokens.
 */
export type Tokens = {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
};
const noTokens = (): Tokens => ({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
});
function addTokens(t: Tokens, c: CallRecord): void {
  t.inputTokens += c.inputTokens;
  t.outputTokens += c.outputTokens;
  t.cacheReadTokens += c.cacheReadTokens ?? 0;
  t.cacheWriteTokens += c.cacheWriteTokens ?? 0;
  t.reasoningTokens += c.reasoningTokens ?? 0;
}

/** The usage report: one row per group, over the window (null ends: unbounded). */
export interface UsageReport {
  by: UsageBy;
  from: string | null;
  to: string | null;
  data: Array<Tokens & { group: string; calls: number; failed: number; costMicros: number; meanLatencyMs: number }>;
}

export async function usageReport(
  calls: CallLog,
  wid: string,
  q: { from?: Date; to?: Date; by: UsageBy },
): Promise<UsageReport> {
  const from = q.from?.toISOString();
  const to = q.to?.toISOString();
  const groups = new Map<
    string,
    Tokens & { group: string; calls: number; failed: number; costMicros: number; latencyMs: number }
  >();
  let after: string | undefined;
  for (;;) {
    const page = await calls.page(wid, { ...(after ? { after } : {}), limit: 1000 });
    for (const c of page) {
      if ((from && c.at < from) || (to && c.at >= to)) continue;
      const name = groupOf(c, q.by);
      const g = groups.get(name) ?? {
        group: name,
        calls: 0,
        failed: 0,
        ...noTokens(),
        costMicros: 0,
        latencyMs: 0,
      };
      g.calls += 1;
      if (c.outcome !== 'ok' && c.outcome !== 'dry_run') g.failed += 1;
      addTokens(g, c);
      g.costMicros += c.costMicros;
      g.latencyMs += c.latencyMs;
      groups.set(name, g);
    }
    if (page.length < 1000) break;
    after = page[page.length - 1]!.id;
  }
  const data = [...groups.values()].map(({ latencyMs, ...g }) => ({
    ...g,
    meanLatencyMs: g.calls > 0 ? Math.round(latencyMs / g.calls) : 0,
  }));
  return { by: q.by, from: from ?? null, to: to ?? null, data };
}

/**
 * Usage over time for the console (GET /api/w/{wid}/usage): calls, tokens and spend per hour or
 * per UTC day between `from` (inclusive) and `to` (exclusive), split by model, team or key.
 * Rules:
 * - Every bucket of the window is answered, empty ones with zeros, so a chart's x axis is the
 *   window itself; `from` is moved back to the start of its bucket.
 * - At most MAX_BUCKETS buckets: a longer window is refused by the route's schema.
 * - `groups` holds the window's totals per group, most spent first (then most calls, then name).
 */
export const MAX_BUCKETS = 400;
const BUCKET_MS = { hour: 3_600_000, day: 86_400_000 } as const;
export type Totals = Tokens & { calls: number; failed: number; costMicros: number };

/** The console's usage chart: the window's totals, per group, and per bucket (with each group's share). */
export interface UsageSeries {
  by: 'model' | 'team' | 'key';
  bucket: 'hour' | 'day';
  /** The window, `from` moved back to the start of its bucket. */
  from: string;
  to: string;
  total: Totals;
  /** Per group, most spent first (then most calls, then name). */
  groups: Array<Totals & { group: string }>;
  /** Every bucket of the window, empty ones with zeros. */
  buckets: Array<{
    start: string;
    calls: number;
    costMicros: number;
    groups: Record<string, { calls: number; costMicros: number }>;
  }>;
}
const zero = (): Totals => ({ calls: 0, failed: 0, ...noTokens(), costMicros: 0 });

export function bucketStart(at: number, bucket: 'hour' | 'day'): number {
  return Math.floor(at / BUCKET_MS[bucket]) * BUCKET_MS[bucket];
}

export function bucketCount(from: Date, to: Date, bucket: 'hour' | 'day'): number {
  return Math.ceil((to.getTime() - bucketStart(from.getTime(), bucket)) / BUCKET_MS[bucket]);
}

export async function usageSeries(
  calls: CallLog,
  wid: string,
  q: { from: Date; to: Date; by: 'model' | 'team' | 'key'; bucket: 'hour' | 'day' },
): Promise<UsageSeries> {
  const size = BUCKET_MS[q.bucket];
  const start = bucketStart(q.from.getTime(), q.bucket);
  const end = q.to.getTime();
  const count = Math.max(0, Math.ceil((end - start) / size));
  const buckets = Array.from({ length: count }, (_, i) => ({
    start: new Date(start + i * size).toISOString(),
    calls: 0,
    costMicros: 0,
    groups: {} as Record<string, { calls: number; costMicros: number }>,
  }));
  const groups = new Map<string, Totals & { group: string }>();
  const total = zero();
  const add = (t: Totals, c: CallRecord) => {
    t.calls += 1;
    if (c.outcome !== 'ok' && c.outcome !== 'dry_run') t.failed += 1;
    addTokens(t, c);
    t.costMicros += c.costMicros;
  };
  let after: string | undefined;
  for (;;) {
    const page = await calls.page(wid, { ...(after ? { after } : {}), limit: 1000 });
    for (const c of page) {
      const at = Date.parse(c.at);
      if (at < start || at >= end) continue;
      const name = groupOf(c, q.by);
      const g = groups.get(name) ?? { group: name, ...zero() };
      groups.set(name, g);
      add(g, c);
      add(total, c);
      const b = buckets[Math.floor((at - start) / size)]!;
      b.calls += 1;
      b.costMicros += c.costMicros;
      const bg = (b.groups[name] ??= { calls: 0, costMicros: 0 });
      bg.calls += 1;
      bg.costMicros += c.costMicros;
    }
    if (page.length < 1000) break;
    after = page[page.length - 1]!.id;
  }
  return {
    by: q.by,
    bucket: q.bucket,
    from: new Date(start).toISOString(),
    to: q.to.toISOString(),
    total,
    groups: [...groups.values()].sort(
      (a, b) => b.costMicros - a.costMicros || b.calls - a.calls || a.group.localeCompare(b.group),
    ),
    buckets,
  };
}
