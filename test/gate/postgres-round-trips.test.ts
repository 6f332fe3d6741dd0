import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bearer, call } from '../helpers/http.js';
import { startCluster, type Cluster } from '../helpers/pg-cluster.js';
import { startServer, stopAndClean, tempDir, type RunningServer } from '../helpers/process.js';
import { createAgent, PAY_ACME } from '../helpers/gate.js';

/**
 * An authorize on PostgreSQL without chatter (src/store/pg-tx.ts, src/gate/authorize.ts): the
 * round trips one decision makes to the database, counted by the store's own
 * `svc_store_round_trips_total`, and two instances deciding at once for agents that share no
 * state, with the serialization failures and deadlocks counted as PostgreSQL's own log reports
 * them. A private cluster of this file's own, so that its log holds only this file's traffic.
 */

const TOKEN = 'metrics-scrape-token-round-trips';
let cluster: Cluster;
let a: RunningServer;
let b: RunningServer;

test.before(async () => {
  cluster = await startCluster();
  const env = { SVC_METRICS_TOKEN: TOKEN, SVC_GATE_RATE_PER_MINUTE: '1000000' };
  const dataDir = await tempDir();
  a = await startServer({ dataDir, env, args: ['--store', cluster.url] });
  // The second instance shares the first's data dir: its master key, as two machines would share it.
  b = await startServer({ dataDir, env, args: ['--store', cluster.url] });
});

test.after.always(async () => {
  await b?.stop();
  await stopAndClean(a);
  cluster?.stop();
});

/** An agent paying acme.example under a daily limit, in workspace `wid`, and its key. */
/** An agent that may pay acme.example up to 1.00 a time, with a daily limit no run reaches. */
const RULES = [{ ...PAY_ACME, maxAmount: 100, periodLimit: { amount: 100_000_000, period: 'day' } }];

const PAYMENT = {
  type: 'payment',
  summary: 'Pay Acme',
  payment: { amount: 1, currency: 'EUR', merchant: 'acme.example' },
};

async function authorize(server: RunningServer, key: string): Promise<void> {
  const res = await call(server.url, 'POST', '/v1/actions/authorize', { headers: bearer(key), json: PAYMENT });
  if (res.status !== 200 || res.body.decision !== 'allow') throw new Error(`authorize: ${res.status} ${res.text}`);
}

async function counter(server: RunningServer, name: string): Promise<number> {
  const res = await fetch(`${server.url}/metrics`, { headers: bearer(TOKEN) });
  const text = await res.text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`))
    .reduce((n, line) => n + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

const LEDGER_TABLES = ['ledgerHeads', 'ledger', 'checkpoints'];

/**
 * Serialization failures and deadlocks in the cluster's log after `from` (a byte offset), and
 * which of them were over the ledger's own rows only: the failure names the tables of the rows
 * that changed (svc's checked writes), or the statement that failed writes only ledger tables.
 */
function conflictsInLog(from: number): { count: number; ledger: number; others: string[] } {
  const lines = readFileSync(join(cluster.dir, 'log')).subarray(from).toString().split('\n');
  let count = 0;
  let ledger = 0;
  const others: string[] = [];
  lines.forEach((line, i) => {
    if (!/could not serialize access|deadlock detected/.test(line)) return;
    count += 1;
    const named = /\(tables ([^)]*)\)/.exec(line)?.[1]?.split(', ');
    const statement = lines.slice(i + 1, i + 3).find((l) => /STATEMENT:/.test(l)) ?? '';
    const written = [...statement.matchAll(/\(E'([A-Za-z]+)', E'/g)].map((m) => m[1]!);
    const tables = named ?? written;
    if (tables.length > 0 && tables.every((t) => LEDGER_TABLES.includes(t))) ledger += 1;
    else others.push(`${line.slice(0, 300)} ${statement.slice(0, 300)}`);
  });
  return { count, ledger, others };
}
const logSize = () => readFileSync(join(cluster.dir, 'log')).length;

test.serial(
  'one authorize on PostgreSQL makes at most 6 round trips to the database, BEGIN and COMMIT included',
  async (t) => {
    const { key } = await createAgent(a, RULES, 'trips-bot');
    await authorize(a, key); // the first decision of a process reads its signing key set once
    const N = 20;
    const trips0 = await counter(a, 'svc_store_round_trips_total');
    const statements0 = await counter(a, 'svc_store_statements_total');
    for (let i = 0; i < N; i++) await authorize(a, key);
    const trips = ((await counter(a, 'svc_store_round_trips_total')) - trips0) / N;
    const statements = ((await counter(a, 'svc_store_statements_total')) - statements0) / N;
    t.log(`per authorize: ${trips.toFixed(2)} round trips, ${statements.toFixed(2)} statements`);
    t.true(trips <= 6, `${trips} round trips per authorize`);
    t.true(trips >= 1, 'the decisions were written to PostgreSQL');
  },
);

test.serial(
  'two instances deciding at once for two agents of one workspace: no serialization failure or deadlock in PostgreSQL’s log, the ledger’s integrator included',
  async (t) => {
    // Both made through A (one store); B decides for its own.
    const { key: keyA } = await createAgent(a, RULES, 'left-bot');
    const { key: keyB } = await createAgent(a, RULES, 'right-bot');
    const from = logSize();
    const retries0 =
      (await counter(a, 'svc_store_write_retries_total')) + (await counter(b, 'svc_store_write_retries_total'));
    const PER = 60;
    const lane = async (server: RunningServer, key: string) => {
      for (let i = 0; i < PER; i++) await authorize(server, key);
    };
    // Four requests at a time on each instance, each instance for its own agent.
    await Promise.all([
      lane(a, keyA),
      lane(a, keyA),
      lane(a, keyA),
      lane(a, keyA),
      lane(b, keyB),
      lane(b, keyB),
      lane(b, keyB),
      lane(b, keyB),
    ]);
    const retries =
      (await counter(a, 'svc_store_write_retries_total')) +
      (await counter(b, 'svc_store_write_retries_total')) -
      retries0;
    const found = conflictsInLog(from);
    t.log(
      `${8 * PER} decisions: ${found.count} conflicts in PostgreSQL's log (${found.ledger} over the ledger's head and checkpoints), ${retries} writes retried`,
    );
    // Decisions append their ledger records under keys of their own and the integrator (one, under
    // the lease) is the only writer of the head: nothing is shared but the agents' own rows.
    t.is(found.count, 0, found.others.join('\n'));
    t.is(retries, 0);
  },
);
