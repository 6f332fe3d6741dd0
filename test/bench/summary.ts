/**
 * The one table `npm run bench` ends with: every goal each benchmark script measured (their
 * `goalsTable` appends them to SVC_BENCH_RESULTS as JSON lines), with svc's figure, its baseline's,
 * the ratio, the server CPU per request in microseconds, the goal and PASS, BELOW or '-' (a figure
 * without a goal). Written to bench-results.md as well, for the README's benchmark section.
 *
 * `summary.ts NAME=CODE …`: each script's exit code. A benchmark is a measurement, not a test: a
 * goal below never fails the run. Exits 1 only when a script failed (requests not answered 2xx, a
 * ledger that does not agree, a crash) or nothing was measured.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { table } from './gateway-report.js';
import { resultOf, type Goal } from './report.js';

const file = process.env.SVC_BENCH_RESULTS ?? 'bench-results.jsonl';
const codes = process.argv.slice(2).map((arg) => arg.split('=') as [string, string]);
const goals = existsSync(file)
  ? readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Goal & { script: string })
  : [];

const head = ['script', 'path', 'svc', 'baseline', 'ratio', 'CPU µs/req', 'measured', 'goal', 'result'];
const rows = goals.map((g) => [
  g.script,
  g.benchmark,
  g.svc ?? '',
  g.baseline ?? '',
  g.ratio === undefined ? '' : g.ratio.toFixed(2),
  g.cpuMicros === undefined ? '' : g.cpuMicros.toFixed(0),
  g.measured,
  g.goal || '-',
  resultOf(g),
]);
const failed = codes.filter(([, code]) => code !== '0').map(([name, code]) => `${name} exited ${code}`);
const below = goals.filter((g) => resultOf(g) === 'BELOW').length;
const passed = goals.filter((g) => resultOf(g) === 'PASS').length;
const verdict = `${passed} goals PASS, ${below} BELOW${failed.length > 0 ? `; FAILED: ${failed.join(', ')}` : ''}`;

console.log(`\nsummary of npm run bench (load average ${loadavg()[0]!.toFixed(2)} at the end)\n`);
console.log(table(head, rows, 2));
console.log(`\n${verdict}`);

const cell = (text: string) => text.replace(/\|/g, '\\|');
const markdown = [
  `# npm run bench, ${new Date().toISOString().slice(0, 10)}`,
  '',
  `Node ${process.version}; load average ${loadavg()[0]!.toFixed(2)} at the end. ${verdict}.`,
  '',
  `| ${head.join(' | ')} |`,
  `| ${head.map(() => '---').join(' | ')} |`,
  ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  '',
].join('\n');
writeFileSync('bench-results.md', markdown);
console.log('written to bench-results.md');
process.exitCode = failed.length > 0 || goals.length === 0 ? 1 : 0;
