import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import test from 'ava';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { bearer, call } from '../helpers/http.js';
import { ROOT, startServer, stopAndClean, svc, type RunningServer } from '../helpers/process.js';
import { within } from '../helpers/wait.js';

/**
 * A stop that cannot finish still ends the process, within `server.shutdownTimeoutMs` and a
 * margin, and frees the port. The hang is a real one: another process holds LMDB's write lock (as
 * a stuck CLI would), so the server's commit waits in lmdb-js's write thread, the store cannot
 * flush or close, and Node's own exit would wait for that thread forever.
 */

const SHUTDOWN_TIMEOUT_MS = 1000;
// The bound the server keeps (the timeout and its 2 s margin), with room for a loaded machine.
const EXIT_WITHIN_MS = SHUTDOWN_TIMEOUT_MS + 2000 + 10_000;

let server: RunningServer | undefined;
let holder: ChildProcess | undefined;

test.after.always(async () => {
  if (holder && holder.exitCode === null && holder.signalCode === null) holder.kill('SIGKILL');
  await stopAndClean(server);
});

/** Another process that opens the store and holds its write lock (a write transaction) for a minute. */
async function holdWriteLock(dataDir: string): Promise<ChildProcess> {
  const script = `
    import { open } from 'lmdb';
    const root = open({ path: ${JSON.stringify(join(dataDir, 'svc.mdb'))}, maxDbs: 128 });
    root.transactionSync(() => {
      process.stdout.write('holding\\n');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000);
    });
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await within(once(child.stdout!, 'data'), 'lock holder ready');
  return child;
}

test('a stop that hangs on the store ends the process hard within the shutdown timeout and frees the port', async (t) => {
  t.timeout(120_000);
  server = await startServer({
    env: { SVC_GATE_RATE_PER_MINUTE: '1000000' },
    config: { server: { shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS } },
  });
  const running = server;
  const agent = await createAgent(running);
  const before = await authorize(running, agent.key, payment(100));
  t.is(before.body.decision, 'allow');

  holder = await holdWriteLock(running.dataDir);
  // A write that waits for the lock: it keeps the store from flushing and closing.
  const stuck = authorize(running, agent.key, payment(100, { idempotencyKey: 'stuck' })).catch((err: Error) => err);

  const started = Date.now();
  const code = await within(running.stop('SIGTERM'), 'exit after SIGTERM', EXIT_WITHIN_MS + 5000);
  const took = Date.now() - started;
  t.is(code, null, running.stderr());
  t.is(running.proc.signalCode, 'SIGKILL', 'it ended hard');
  t.true(took >= SHUTDOWN_TIMEOUT_MS, `it waited for the stop first (${took} ms)`);
  t.true(took < EXIT_WITHIN_MS, `it ended in ${took} ms`);
  t.regex(running.stderr(), /"msg":"the stop did not finish in time; ending the process hard"/);
  t.regex(running.stderr(), /"boundMs":3000/);
  // The port is free: nothing answers on it.
  await t.throwsAsync(call(running.url, 'GET', '/healthz'), { code: 'ECONNREFUSED' });
  const answer = await stuck;
  t.false(!(answer instanceof Error) && answer.status === 200, 'the write that waited was never acknowledged');

  // The lock's holder ends: the store opens, and what was acknowledged is there and verifies.
  holder.kill('SIGKILL');
  await once(holder, 'exit');
  const verified = await svc(['ledger', 'verify', '--data-dir', running.dataDir, '--json']);
  t.is(verified.code, 0, verified.stdout + verified.stderr);
  server = await startServer({ dataDir: running.dataDir });
  const read = await call(server.url, 'GET', `/v1/actions/${before.body.id}`, { headers: bearer(agent.key) });
  t.is(read.status, 200, read.text);
});
