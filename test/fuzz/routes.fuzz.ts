import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { report, runCampaign } from './campaign.js';
import { raw } from './wire.js';

/**
 * `npm run fuzz`: the campaign over every route (test/fuzz/campaign.ts). FUZZ_SEED (default 1),
 * FUZZ_RUNS requests per route and method (default 300), FUZZ_ROUTE to fuzz only the routes whose
 * `METHOD /path` contains it, FUZZ_PATH (with FUZZ_ROUTE) to replay one counterexample. Exits 1 on
 * any finding that is not a known one.
 */
const seed = Number(process.env.FUZZ_SEED ?? 1);
const runs = Number(process.env.FUZZ_RUNS ?? 300);
const route = process.env.FUZZ_ROUTE;
const path = process.env.FUZZ_PATH;
const verbose = process.env.FUZZ_VERBOSE === '1';

process.stdout.write(`fuzz: seed ${seed}, ${runs} requests per route${route ? `, routes matching "${route}"` : ''}\n`);
const result = await runCampaign({
  seed,
  runs,
  ...(route ? { route } : {}),
  ...(path ? { path } : {}),
  log: (line) => {
    if (verbose || line.startsWith('FINDING')) process.stdout.write(`${line}\n`);
  },
});
process.stdout.write(`${report(result)}\n`);
// Each finding's request as it went on the wire, to send again to any server: nc 127.0.0.1 PORT < FILE
// (its credentials were this run's, so a route behind one answers 401 elsewhere).
if (result.findings.length > 0) {
  const dir = await mkdtemp(join(tmpdir(), `svc-fuzz-${seed}-`));
  for (const [i, f] of result.findings.entries())
    await writeFile(join(dir, `finding-${i + 1}.http`), raw(f.request, 8080));
  process.stdout.write(`\nthe findings' requests, byte for byte: ${dir}/finding-N.http (nc 127.0.0.1 8080 < FILE)\n`);
}
process.exitCode = result.findings.length > 0 ? 1 : 0;
