/**
 * Printing for the gateway benchmark: plain aligned tables (first columns left, numbers right),
 * numbers formatted alike everywhere, each measure beside its ratio to its baseline (the mock
 * called directly, the floor, or the floor answering locally), and goals as report.ts's Goal.
 */
import { CLK_TCK, percentile, type Saturated, type Sequential } from './gateway-load.js';
import type { Goal } from './report.js';

export function table(head: string[], body: string[][], leftColumns = 1): string {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i < leftColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** Milliseconds with three decimals (a microsecond), "-" when there is nothing. */
export const ms = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(3));
/** A signed difference in milliseconds. */
export const plusMs = (v: number) => (Number.isNaN(v) ? '-' : `${v >= 0 ? '+' : ''}${v.toFixed(3)}`);
export const times = (a: number, b: number) => (b > 0 && Number.isFinite(a / b) ? `${(a / b).toFixed(2)}x` : '-');
export const micros = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : '-');

export function failed(bad: Record<string, number>): string {
  const n = Object.values(bad).reduce((s, v) => s + v, 0);
  return n === 0
    ? '0'
    : `${n} (${Object.entries(bad)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ')})`;
}

/** A goal that the measure stays at or under a limit (`strict`: under it). */
export function atMost(
  benchmark: string,
  measured: number,
  limit: number,
  unit: string,
  context: string,
  strict = false,
): Goal {
  return {
    benchmark,
    measured: `${measured.toFixed(unit === 'ms' ? 3 : 0)} ${unit}${context ? ` (${context})` : ''}`,
    goal: `${strict ? '<' : '<='} ${limit} ${unit}`,
    met: strict ? measured < limit : measured <= limit,
  };
}

export const p = (xs: number[], q: number) => percentile(xs, q);
/** Microseconds of server CPU per request. */
export const cpuMicros = (ticks: number, requests: number) => ((ticks / CLK_TCK) * 1e6) / requests;
const ownOverhead = (r: Sequential) =>
  r.overheadMicros.length === 0 ? '-' : `${micros(p(r.overheadMicros, 50))} / ${micros(p(r.overheadMicros, 99))}`;
export const badOf = (rows: Array<{ bad: Record<string, number> }>) =>
  rows.reduce((n, r) => n + Object.values(r.bad).reduce((a, b) => a + b, 0), 0);

export function latencyTable(rows: Sequential[]): string {
  const [mock] = rows as [Sequential];
  return table(
    [
      '1 connection, not streamed',
      'requests',
      'p50 ms',
      'p99 ms',
      'p50 vs mock',
      'p99 vs mock',
      'added p50 ms',
      'added p99 ms',
      'own overhead p50 / p99 µs',
      'CPU µs/req',
      'failed',
    ],
    rows.map((r, i) => [
      r.name,
      String(r.total.length),
      ms(p(r.total, 50)),
      ms(p(r.total, 99)),
      times(p(r.total, 50), p(mock.total, 50)),
      times(p(r.total, 99), p(mock.total, 99)),
      i === 0 ? '-' : plusMs(p(r.total, 50) - p(mock.total, 50)),
      i === 0 ? '-' : plusMs(p(r.total, 99) - p(mock.total, 99)),
      ownOverhead(r),
      micros(cpuMicros(r.cpuTicks, r.requests)),
      failed(r.bad),
    ]),
  );
}

export function ttfbTable(rows: Sequential[]): string {
  const [mock] = rows as [Sequential];
  return table(
    [
      '1 connection, streamed',
      'requests',
      'TTFB p50 ms',
      'TTFB p99 ms',
      'p50 vs mock',
      'added TTFB p50',
      'added TTFB p99',
      'whole p50 ms',
      'whole p99 ms',
      'own overhead p50 / p99 µs',
      'CPU µs/req',
      'failed',
    ],
    rows.map((r, i) => [
      r.name,
      String(r.ttfb.length),
      ms(p(r.ttfb, 50)),
      ms(p(r.ttfb, 99)),
      times(p(r.ttfb, 50), p(mock.ttfb, 50)),
      i === 0 ? '-' : plusMs(p(r.ttfb, 50) - p(mock.ttfb, 50)),
      i === 0 ? '-' : plusMs(p(r.ttfb, 99) - p(mock.ttfb, 99)),
      ms(p(r.total, 50)),
      ms(p(r.total, 99)),
      ownOverhead(r),
      micros(cpuMicros(r.cpuTicks, r.requests)),
      failed(r.bad),
    ]),
  );
}

export function saturatedTable(connections: number, json: Saturated[], stream: Saturated[]): string {
  const rows = (label: string, rs: Saturated[]) => {
    const floor = rs[1]!;
    return rs.map((r) => [
      r.name,
      label,
      r.rps.toFixed(0),
      times(r.rps, floor.rps),
      String(r.p50),
      String(r.p99),
      String(r.requests),
      micros(cpuMicros(r.cpuTicks, r.requests)),
      times(cpuMicros(r.cpuTicks, r.requests), cpuMicros(floor.cpuTicks, floor.requests)),
      failed(r.bad),
    ]);
  };
  return table(
    [
      `${connections} connections`,
      'answer',
      'req/s',
      'vs floor',
      'p50 ms',
      'p99 ms',
      'requests',
      'CPU µs/req',
      'CPU vs floor',
      'failed',
    ],
    [...rows('json', json), ...rows('stream', stream)],
    2,
  );
}

export function refusalTable(rows: Sequential[], status: number[], upstream: number): string {
  const [local] = rows as [Sequential];
  return table(
    [
      'answered without upstream, 1 connection',
      'status',
      'requests',
      'p50 ms',
      'p99 ms',
      'p50 vs local',
      'added p50 ms',
      'own overhead p50 / p99 µs',
      'CPU µs/req',
      'upstream calls',
      'failed',
    ],
    rows.map((r, i) => [
      r.name,
      String(status[i]),
      String(r.total.length),
      ms(p(r.total, 50)),
      ms(p(r.total, 99)),
      times(p(r.total, 50), p(local.total, 50)),
      i === 0 ? '-' : plusMs(p(r.total, 50) - p(local.total, 50)),
      ownOverhead(r),
      micros(cpuMicros(r.cpuTicks, r.requests)),
      i === 0 ? '-' : String(upstream),
      failed(r.bad),
    ]),
  );
}
