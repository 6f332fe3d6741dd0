import test from 'ava';
import { describe, report, runCampaign } from './campaign.js';

/**
 * A short seeded slice of the fuzz campaign (npm run fuzz runs the whole of it): every route of
 * the table, a few requests each. It measures the event loop of this process, so it is serial.
 */
const SEED = 20261129;
const RUNS = 30;

test.serial('a seeded slice of the fuzz campaign finds nothing new on any route', async (t) => {
  t.timeout(180_000);
  const result = await runCampaign({ seed: SEED, runs: RUNS });
  t.log(report(result));
  t.true(result.routes > 100, 'the route table was read');
  t.deepEqual(
    result.findings.map((f) => `${describe(f)}\n  reproduce: ${f.reproduce}`),
    [],
  );
});
