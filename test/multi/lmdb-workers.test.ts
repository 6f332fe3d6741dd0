import test from 'ava';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import {
  killQuietly,
  removeDir,
  running,
  startServer,
  svc,
  tempDir,
  workersOf,
  type RunningServer,
} from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { multiSuite, SERVER_ENV, type DeployOptions } from './suite.js';

/**
 * `svc serve --workers 2` on one LMDB file (issue 17): the multi-instance suite (suite.ts), the
 * two ways in being the one port both workers share; "kill A" kills one worker with SIGKILL.
 */

const servers: RunningServer[] = [];
test.after.always(async () => {
  for (const s of servers) {
    // The workers too: a worker left behind would keep the server's output open, and its stop waiting.
    const workers = s.proc.exitCode === null ? workersOf(s.proc.pid!) : [];
    s.proc.kill('SIGKILL');
    for (const pid of workers) killQuietly(pid);
    await s.stop('SIGKILL');
    await removeDir(s.dataDir);
  }
});

multiSuite(test, 'lmdb, two workers', async (options: DeployOptions = {}) => {
  const server = await startServer({
    args: ['--workers', '2'],
    env: { ...SERVER_ENV, ...options.env },
    config: options.config,
  });
  servers.push(server);
  const workers = workersOf(server.proc.pid!);
  if (workers.length !== 2) throw new Error(`expected 2 worker processes, found ${workers.length}`);
  // The first start's owner is announced once both workers listen (the one that created it
  // reports it); say what the workers logged if it was not.
  if (!(server.boot as { owner?: unknown }).owner)
    throw new Error(
      `no first-start owner announced: ${server.stdout()}\nworkers' log:\n${server
        .stderr()
        .split('\n')
        .filter((line) => !line.includes('"request"'))
        .slice(-40)
        .join('\n')}`,
    );
  return {
    a: server,
    b: server,
    storeArgs: ['--data-dir', server.dataDir],
    killA: async () => {
      const [worker] = workersOf(server.proc.pid!);
      if (worker === undefined) throw new Error('no worker process found');
      process.kill(worker, 'SIGKILL');
    },
  };
});

test.serial('lmdb, two workers: SIGTERM after load drains both workers and the primary exits 0', async (t) => {
  const server = await startServer({ args: ['--workers', '2'], env: SERVER_ENV });
  servers.push(server);
  const workers = workersOf(server.proc.pid!);
  t.is(workers.length, 2);
  const bot = await createAgent(server, [
    { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 },
  ]);
  // Decisions on kept-alive connections, some still open when the signal comes.
  const answers = await Promise.all(Array.from({ length: 40 }, () => authorize(server, bot.key, payment(10))));
  t.deepEqual(
    answers.filter((a) => a.status !== 200).map((a) => a.text),
    [],
  );
  const exited = new Promise<number | null>((resolve) => server.proc.once('exit', (code) => resolve(code)));
  server.proc.kill('SIGTERM');
  const code = await Promise.race([
    exited,
    new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 25_000)),
  ]);
  t.is(code, 0, 'the primary exits 0 once both workers have drained');
  t.deepEqual(workers.filter(running), [], 'no worker is left running');
});

test.serial(
  'lmdb, two workers: kill -9 of the primary under load ends both workers too, and the store opens again',
  async (t) => {
    // The agent is made by a one-process server first: this test is about the primary's death, not
    // the first start (where the worker that created the owner announces it).
    const first = await startServer({ env: SERVER_ENV });
    servers.push(first);
    const bot = await createAgent(first, [
      { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 },
    ]);
    await first.stop();
    const server = await startServer({ args: ['--workers', '2'], env: SERVER_ENV, dataDir: first.dataDir });
    servers.push(server);
    const workers = workersOf(server.proc.pid!);
    t.is(workers.length, 2);
    // Writes in flight on both workers when the primary dies (their answers may never come).
    const load = Array.from({ length: 60 }, () => authorize(server, bot.key, payment(10)).catch(() => undefined));
    await authorize(server, bot.key, payment(10));
    server.proc.kill('SIGKILL');
    await Promise.all(load);
    const left = await poll(
      () => workers.filter(running),
      (alive) => alive.length === 0,
      { timeoutMs: 15_000, everyMs: 100 },
    );
    t.deepEqual(left, [], 'a worker outlived its primary');
    // Nothing holds the store: a new server opens it and serves.
    const again = await startServer({ env: SERVER_ENV, dataDir: server.dataDir });
    servers.push(again);
    t.is((await authorize(again, bot.key, payment(10))).status, 200);
  },
);

test.serial('lmdb, two workers: a start on a port another program holds exits 3 (port in use)', async (t) => {
  // Each worker binds the port beside the others (SO_REUSEPORT); a socket bound without it still
  // keeps the port to itself.
  const held = createServer();
  held.listen(0, '127.0.0.1');
  await once(held, 'listening');
  const port = (held.address() as { port: number }).port;
  const dataDir = await tempDir();
  try {
    const busy = await svc(
      ['serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port), '--workers', '2'],
      { env: SERVER_ENV },
    );
    t.is(busy.code, 3, busy.stderr);
    t.regex(busy.stderr, /port is in use/);
  } finally {
    held.close();
    await removeDir(dataDir);
  }
});

test.serial(
  'lmdb, two workers: a second svc serve --workers on the port of a running one exits 3 (port in use)',
  async (t) => {
    // The workers' SO_REUSEPORT would let another server's workers join this one's port group and
    // take a share of its connections: the second start is refused before any worker starts.
    const first = await startServer({ args: ['--workers', '2'], env: SERVER_ENV });
    servers.push(first);
    const port = new URL(first.url).port;
    const dataDir = await tempDir();
    try {
      const second = await svc(
        ['serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', port, '--workers', '2'],
        { env: SERVER_ENV },
      );
      t.is(second.code, 3, second.stderr);
      t.regex(second.stderr, /port is in use/);
      const health = await fetch(`${first.url}/healthz`);
      t.is(health.status, 200, 'the first server still serves');
    } finally {
      await removeDir(dataDir);
    }
  },
);
