import { report, runCampaign } from './campaign.js';

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
process.exitCode = result.findings.length > 0 ? 1 : 0;
