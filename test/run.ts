import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { startCluster, type Cluster } from './helpers/pg-cluster.js';
import { ROOT } from './helpers/process.js';

/**
 * `npm test`'s test runner: ava has no global setup, so this starts one private PostgreSQL cluster
 * (helpers/pg-cluster.ts) for the whole run, hands its URL to ava in SVC_TEST_PG_URL (each test
 * file makes its own database in it: helpers/postgres.ts), runs ava with the given arguments, and
 * stops the cluster whatever happens: ava's exit, a crash here, SIGINT or SIGTERM.
 */

let cluster: Cluster | undefined;
const stop = () => {
  cluster?.stop();
  cluster = undefined;
};
process.on('exit', stop);

if (!process.env.SVC_TEST_PG_URL) {
  cluster = await startCluster();
  process.stderr.write(`test PostgreSQL cluster on 127.0.0.1:${cluster.port}\n`);
}
const child = spawn(
  process.execPath,
  [join(ROOT, 'node_modules', 'ava', 'entrypoints', 'cli.mjs'), ...process.argv.slice(2)],
  {
    stdio: 'inherit',
    env: { ...process.env, ...(cluster ? { SVC_TEST_PG_URL: cluster.url } : {}) },
  },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // The terminal sends SIGINT to ava as well; a SIGTERM is passed on. Either way the cluster is
  // stopped once ava has exited.
  process.on(signal, () => child.kill(signal));
}
child.on('exit', (code, signal) => {
  stop();
  process.exit(code ?? (signal ? 1 : 0));
});
