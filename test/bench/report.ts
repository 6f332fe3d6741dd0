/**
 * The benchmark's printed report: one table of what each route measured, one of the goals.
 * A goal is PASS or BELOW; failed requests (any answer not 2xx, connection errors, timeouts)
 * make the run fail whatever the goals say, since its numbers do not measure the intended path.
 */
import { badCount, type Measured } from './load.js';

export interface Goal {
  benchmark: string;
  /** What was measured, as printed: "0.83" or "p50 0.91 ms, p99 3.20 ms". */
  measured: string;
  /** The goal, as printed: ">= 0.70 of bare req/s". */
  goal: string;
  met: boolean;
}

/** Throughput goal: the product keeps at least `min` of its baseline's requests/s. */
export function ratioGoal(benchmark: string, product: Measured, baseline: Measured, min: number): Goal {
  const ratio = product.rps / baseline.rps;
  return { benchmark, measured: `${ratio.toFixed(2)} of bare req/s`, goal: `>= ${min.toFixed(2)}`, met: ratio >= min };
}

/**
 * Latency goal at a fixed offered rate: both percentiles under their limits (milliseconds), and
 * the rate itself reached (95% of it), since latencies of a server that fell behind the offered
 * rate are not latencies at that rate.
 */
export function latencyGoal(benchmark: string, m: Measured, rate: number, maxP50: number, maxP99: number): Goal {
  const reached = m.rps >= 0.95 * rate;
  return {
    benchmark,
    measured: `p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms at ${m.rps.toFixed(0)} req/s${reached ? '' : ' (rate not reached)'}`,
    goal: `p50 < ${maxP50} ms, p99 < ${maxP99} ms`,
    met: reached && m.p50 < maxP50 && m.p99 < maxP99,
  };
}

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
    ['benchmark', 'route', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'failed'],
    rows.map(({ benchmark, m }) => [
      benchmark,
      m.name,
      m.rps.toFixed(0),
      ms(m.p50),
      ms(m.p99),
      String(m.total),
      failed(m),
    ]),
    2,
  );
}

export function goalsTable(goals: Goal[]): string {
  return table(
    ['benchmark', 'measured', 'goal', 'result'],
    goals.map((g) => [g.benchmark, g.measured, g.goal, g.met ? 'PASS' : 'BELOW']),
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
