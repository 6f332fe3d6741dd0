/**
 * How much the store grows per gate decision and per gateway call (README, the store): the real
 * server (`dist/`) with the mock vendor, N allowed payments through POST /v1/actions/authorize
 * (each with an idempotency key) and N chat completions through the gateway; after each phase a
 * compacted `svc backup` counts the pages in use, so free pages and the file's preallocation do
 * not count. Run with `npm run build && node --import=tsx test/bench/store-growth.ts [N]`.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createAgent, payment } from '../helpers/gate.js';
import { bearer, call } from '../helpers/http.js';
import { startMockVendor } from '../helpers/mock-vendor.js';
import { removeDir, svc } from '../helpers/process.js';
import { startGateway, user } from '../gateway/support.js';

const N = Number(process.argv[2] ?? 2000);
const CONCURRENCY = 8;

async function inUse(dataDir: string, name: string): Promise<number> {
  const out = join(dataDir, '..', `growth-${name}-${process.pid}.mdb`);
  const res = await svc(['backup', '--data-dir', dataDir, '--out', out]);
  if (res.code !== 0) throw new Error(`backup failed: ${res.stderr}`);
  const { size } = await stat(out);
  await removeDir(out);
  return size;
}

async function inParallel(n: number, one: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await one(next++);
    }),
  );
}

const vendor = await startMockVendor({ openaiKey: 'sk-mock-openai', anthropicKey: 'sk-mock-anthropic' });
const gateway = await startGateway(vendor, {}, { SVC_GATE_RATE_PER_MINUTE: '1000000', SVC_LOG_LEVEL: 'warn' });
try {
  const { server } = gateway;
  const agent = await createAgent(server, [
    { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 },
  ]);
  const key = await gateway.key();
  // Let the first writes (keys, ledger heads, checkpoints) settle before the baseline.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const base = await inUse(server.dataDir, 'base');

  await inParallel(N, async (i) => {
    const res = await call(server.url, 'POST', '/v1/actions/authorize', {
      headers: { ...bearer(agent.key), 'idempotency-key': `growth-${i}` },
      json: payment(100 + (i % 50)),
    });
    if (res.status !== 200 || res.body.decision !== 'allow') throw new Error(`authorize: ${res.status} ${res.text}`);
  });
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const afterDecisions = await inUse(server.dataDir, 'decisions');

  await inParallel(N, async (i) => {
    const res = await call(server.url, 'POST', '/v1/chat/completions', {
      headers: { ...bearer(key), 'x-svc-task-class': 'summarize' },
      json: { model: 'small', messages: user(`summarize note number ${i} in a sentence`) },
    });
    if (res.status !== 200) throw new Error(`gateway: ${res.status} ${res.text}`);
  });
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const afterCalls = await inUse(server.dataDir, 'calls');

  const perDecision = (afterDecisions - base) / N;
  const perCall = (afterCalls - afterDecisions) / N;
  console.log(`store pages in use (compacted backup), N = ${N}`);
  console.log(`  baseline            ${base} bytes`);
  console.log(
    `  per gate decision   ${perDecision.toFixed(0)} bytes (allowed payment with receipt, idempotency key, ledger record)`,
  );
  console.log(`  per gateway call    ${perCall.toFixed(0)} bytes (call record, task, counters)`);
} finally {
  await gateway.server.stop();
  await removeDir(gateway.server.dataDir);
  await vendor.close();
}
