/**
 * The benchmark's printed report: one table of what each route measured, one of the goals.
 * A goal is PASS or BELOW; failed requests (any answer not 2xx, connection errors, timeouts)
 * make the run fail whatever the goals say, since its numbers do not measure the intended path.
 */
import { appendFileSync } from 'node:fs';
import { badCount, type Measured } from './load.js';

export interface Goal {
  benchmark: string;
  /** What was measured, as printed: "0.83" or "p50 0.91 ms, p99 3.20 ms". */
  measured: string;
  /** The goal, as printed: ">= 0.70 of bare req/s". */
  goal: string;
  met: boolean;
  /**
   * For the one table `npm run bench` ends with (summary.ts), when the goal has them: svc's figure
   * and its baseline's as printed, their ratio, and the server CPU per request in microseconds.
   */
  svc?: string;
  baseline?: string;
  ratio?: number;
  cpuMicros?: number;
}

/** Throughput goal: the product keeps at least `min` of its baseline's requests/s. */
export function ratioGoal(benchmark: string, product: Measured, baseline: Measured, min: number): Goal {
  const ratio = product.rps / baseline.rps;
  return {
    benchmark,
    measured: `${ratio.toFixed(2)} of bare req/s`,
    goal: `>= ${min.toFixed(2)}`,
    met: ratio >= min,
    ...figures(product, baseline),
  };
}

/** Server CPU per request at most `max` microseconds (needs `cpuMicros`: a Target with a pid). */
export function cpuGoal(benchmark: string, product: Measured, baseline: Measured, max: number): Goal {
  const cpu = product.cpuMicros ?? NaN;
  return {
    benchmark: `${benchmark} CPU`,
    measured: `${cpu.toFixed(0)} µs of server CPU per request`,
    goal: `<= ${max} µs`,
    met: cpu <= max,
    ...figures(product, baseline),
  };
}

/** The summary's columns for a product measured beside its baseline. */
export function figures(product: Measured, baseline: Measured): Partial<Goal> {
  return {
    svc: `${product.rps.toFixed(0)} req/s`,
    baseline: `${baseline.rps.toFixed(0)} req/s`,
    ratio: product.rps / baseline.rps,
    ...(product.cpuMicros === undefined ? {} : { cpuMicros: product.cpuMicros }),
  };
}

/**
 * Latency goal at a fixed offered rate: the percentiles under their limits (milliseconds; a null
 * p50 limit checks p99 only), and the rate itself reached (95% of it), since latencies of a server
 * that fell behind the offered rate are not latencies at that rate.
 */
export function latencyGoal(
  benchmark: string,
  m: Measured,
  rate: number,
  maxP50: number | null,
  maxP99: number,
  baseline?: Measured,
): Goal {
  const reached = m.rps >= 0.95 * rate;
  return {
    benchmark,
    measured: `p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms at ${m.rps.toFixed(0)} req/s${reached ? '' : ' (rate not reached)'}`,
    goal: maxP50 === null ? `p99 <= ${maxP99} ms` : `p50 < ${maxP50} ms, p99 < ${maxP99} ms`,
    met: reached && (maxP50 === null ? m.p99 <= maxP99 : m.p50 < maxP50 && m.p99 < maxP99),
    svc: `p50 ${m.p50.toFixed(2)} / p99 ${m.p99.toFixed(2)} ms`,
    ...(baseline ? { baseline: `p50 ${baseline.p50.toFixed(2)} / p99 ${baseline.p99.toFixed(2)} ms` } : {}),
  };
}

/** PASS or BELOW; '-' for a figure reported without a goal (`goal` empty). */
export const resultOf = (g: Goal): string => (g.goal === '' ? '-' : g.met ? 'PASS' : 'BELOW');

function table(head: string[], body: string[][], leftColumns = 1): string {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i < leftColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

const ms = (v: number) => (Number.isInteger(v) ? v.toFixed(0) : v.toFixed(2));
const failed = (m: Measured) =>
  badCount(m.bad) === 0
    ? '0'
    : `${badCount(m.bad)} (${Object.entries(m.bad)
        .map(([k, n]) => `${k}: ${n}`)
        .join(', ')})`;

export function routesTable(rows: Array<{ benchmark: string; m: Measured }>): string {
  return table(
    ['benchmark', 'route', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'requests', 'failed'],
    rows.map(({ benchmark, m }) => [
      benchmark,
      m.name,
      m.rps.toFixed(0),
      ms(m.p50),
      ms(m.p99),
      m.cpuMicros === undefined ? '' : m.cpuMicros.toFixed(0),
      String(m.total),
      failed(m),
    ]),
    2,
  );
}

/**
 * The goals as printed by each benchmark script; with SVC_BENCH_RESULTS set (npm run bench), each
 * is also appended to that file as a JSON line, for the one table summary.ts prints at the end.
 */
export function goalsTable(goals: Goal[]): string {
  const file = process.env.SVC_BENCH_RESULTS;
  if (file) {
    const script = process.argv[1]?.replace(/.*\//, '').replace(/\.ts$/, '') ?? '';
    appendFileSync(file, goals.map((g) => `${JSON.stringify({ script, ...g })}\n`).join(''));
  }
  return table(
    ['benchmark', 'measured', 'goal', 'result'],
    goals.map((g) => [g.benchmark, g.measured, g.goal || '-', resultOf(g)]),
    3,
  );
}

/** Prints each problem as FAIL (or OK when there is none) and gives the exit status: 1 on any. */
export function verdict(problems: readonly string[]): number {
  console.log('');
  for (const problem of problems) console.log(`FAIL: ${problem}`);
  if (problems.length > 0) return 1;
  console.log('OK');
  return 0;
}
