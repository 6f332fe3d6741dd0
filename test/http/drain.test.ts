import { once } from 'node:events';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { createAgent, payment } from '../helpers/gate.js';
import { bearer } from '../helpers/http.js';
import { removeDir, startServer, type RunningServer } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';
import { poll } from '../helpers/wait.js';

/**
 * SIGTERM under load (src/http/drain.ts, `svc serve`): 50 keep-alive clients authorize in a loop
 * and the server is told to stop in the middle of it. What a client must see:
 * - every request the server received is answered with a whole HTTP response, never a reset;
 * - a request sent on a kept-alive socket is never cut off (Node's `reusedSocket`: the race that
 *   a server closing idle sockets early causes); the only failures allowed are new connections
 *   refused once the drain has begun;
 * - every answer sent during the drain carries `connection: close`, so clients stop reusing sockets;
 * - `/readyz` answers 503 draining over a connection that was open before the signal;
 * - the process exits 0, and every allow a client received is in the store with its ledger record.
 */

interface Outcome {
  key: string;
  status?: number;
  connection?: string;
  decision?: string;
  actionId?: string;
  /** The request went out on a socket that had already carried a request (keep-alive). */
  reused: boolean;
  /** Sent after readiness answered draining. */
  afterStopping: boolean;
  error?: string;
}

function send(
  url: string,
  agent: Agent | false,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{
  status?: number;
  headers?: Record<string, unknown>;
  text?: string;
  reused: boolean;
  error?: string;
  /** When the whole request had been handed to the socket (performance.now()). */
  writtenAt?: number;
}> {
  const { hostname, port } = new URL(url);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve) => {
    let writtenAt: number | undefined;
    const req = httpRequest({
      host: hostname,
      port: Number(port),
      method,
      path,
      agent,
      headers: {
        ...headers,
        ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
      },
    });
    // Emitted once the last byte was written to the socket (for a new one, after it connected).
    req.on('finish', () => {
      writtenAt = performance.now();
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode, headers: res.headers, text, reused: req.reusedSocket, writtenAt }),
      );
      res.on('error', (err: NodeJS.ErrnoException) =>
        resolve({ reused: req.reusedSocket, error: `${err.code ?? ''} ${err.message}`, writtenAt }),
      );
    });
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ reused: req.reusedSocket, error: `${err.code ?? 'ERROR'} ${err.message}`, writtenAt }),
    );
    req.end(payload);
  });
}

let first: RunningServer | undefined;

test.after.always(async () => {
  if (first?.proc.exitCode === null) first.proc.kill('SIGKILL');
  if (first) await removeDir(first.dataDir);
});

test('SIGTERM under 50 keep-alive clients: every received request is answered, then exit 0 with nothing lost', async (t) => {
  t.timeout(180_000);
  const server = await startServer({
    env: { SVC_GATE_RATE_PER_MINUTE: '100000000' },
    config: { load: { sampleIntervalMs: 0 } },
  });
  first = server;
  const exited = new Promise<number | null>((r) => server.proc.on('exit', (code) => r(code)));
  const agent = await createAgent(server, [
    { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 },
  ]);

  const pool = new Agent({ keepAlive: true, maxSockets: 50 });
  // A connection opened before the signal and left idle: readiness is asked on it during the drain.
  const probe = new Agent({ keepAlive: true, maxSockets: 1 });

  const outcomes: Outcome[] = [];
  let stopping = false;
  let answered = 0;
  let signalled!: () => void;
  const midLoad = new Promise<void>((r) => {
    signalled = r;
  });
  const client = async (c: number) => {
    for (let n = 0; ; n++) {
      const key = `c${c}-${n}`;
      const afterStopping = stopping;
      const res = await send(
        server.url,
        pool,
        'POST',
        '/v1/actions/authorize',
        bearer(agent.key),
        payment(100, { idempotencyKey: key }),
      );
      const outcome: Outcome = { key, reused: res.reused, afterStopping };
      if (res.error !== undefined) {
        outcomes.push({ ...outcome, error: res.error });
        return; // the server no longer takes connections
      }
      const body = JSON.parse(res.text ?? '') as { decision?: string; id?: string };
      outcomes.push({
        ...outcome,
        status: res.status,
        connection: String(res.headers?.connection ?? ''),
        ...(body.decision ? { decision: body.decision } : {}),
        ...(body.id ? { actionId: body.id } : {}),
      });
      if (++answered === 400) signalled();
    }
  };
  const clients = Array.from({ length: 50 }, (_, c) => client(c));

  // Mid-load: once 400 answers are in (or, should clients fail early, once they have all stopped).
  await Promise.race([midLoad, Promise.all(clients)]);
  t.true(answered >= 400, 'the load was running when the signal was sent');
  const before = await send(server.url, probe, 'GET', '/readyz', {});
  t.is(before.status, 200);
  server.proc.kill('SIGTERM');
  // Readiness, asked again and again on that one kept-alive connection until the signal lands:
  // 200 ready before, then 503 draining, and the connection is closed after that answer.
  let ready = before;
  while (ready.status === 200) {
    ready = await send(server.url, probe, 'GET', '/readyz', {});
    t.true(ready.reused, 'readiness is asked on the connection opened before the signal');
  }
  stopping = true;
  t.is(ready.error, undefined, 'the open connection was not cut');
  t.is(ready.status, 503);
  t.deepEqual(JSON.parse(ready.text ?? '{}'), { status: 'draining' });
  t.is(ready.headers?.connection, 'close');
  const fresh = await send(server.url, false, 'GET', '/healthz', {});
  t.regex(fresh.error ?? `answered ${fresh.status}`, /^ECONNREFUSED/, 'a new connection is refused while draining');

  await Promise.all(clients);
  t.is(await exited, 0, server.stderr());
  t.true(server.stderr().includes('"msg":"stopped"'), 'the server logged that it stopped');
  pool.destroy();
  probe.destroy();

  const failed = outcomes.filter((o) => o.error !== undefined);
  const answers = outcomes.filter((o) => o.error === undefined);
  t.true(answers.length >= 400, `${answers.length} answers`);
  // Each client ends with one refused connection, and with nothing else.
  t.deepEqual(
    failed.filter((o) => o.reused || !o.error!.startsWith('ECONNREFUSED')),
    [],
    'only new connections may fail, and only by being refused',
  );
  t.is(failed.length, 50, 'every client ended on a refused connection');
  // Whole answers: a decision, every time.
  t.deepEqual(
    answers.filter((o) => o.status !== 200 || o.decision !== 'allow' || !o.actionId),
    [],
    'every answer is a 200 allow with its action',
  );
  const late = answers.filter((o) => o.afterStopping);
  t.deepEqual(
    late.filter((o) => o.connection !== 'close'),
    [],
    'every answer during the drain carries connection: close',
  );
  // Every request the server logged was answered to its client.
  const logLines = server
    .stderr()
    .split('\n')
    .filter((l) => l.includes('"msg":"request"') && l.includes('"route":"/v1/actions/authorize"'));
  t.is(logLines.length, answers.length, 'as many authorize answers received as the server logged');

  // Nothing acknowledged was lost: the store, opened again, holds every allow a client received,
  // each with its ledger record, and the ledger verifies.
  const found = await withStore(server.dataDir, async (app) => {
    const subjects = new Set(
      (await app.store.tables.ledger.scan([agent.wid]))
        .map((e) => JSON.parse(e.value.bytes) as { subject?: string; kind?: string })
        .filter((r) => r.kind === 'action.allowed')
        .map((r) => r.subject),
    );
    const stored = await Promise.all(
      answers.map(async (o) => ({ o, action: await app.store.tables.actions.get([agent.wid, o.actionId!]) })),
    );
    return {
      verify: await app.services.ledger.verify(agent.wid),
      missing: stored.filter(({ action }) => action?.decision !== 'allow').map(({ o }) => o.key),
      unrecorded: answers.filter((o) => !subjects.has(o.actionId)).map((o) => o.key),
    };
  });
  t.deepEqual(found.missing, [], 'every allow a client received is in the store');
  t.deepEqual(found.unrecorded, [], 'every allow a client received has its ledger record');
  t.true(found.verify.ok, found.verify.problem ?? '');
});

test('the drain is bounded by server.shutdownTimeoutMs: a request that never finishes arriving is cut, then exit 0', async (t) => {
  const server = await startServer({
    config: { server: { shutdownTimeoutMs: 1000, requestTimeoutMs: 60_000 }, load: { sampleIntervalMs: 0 } },
  });
  try {
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    await once(socket, 'connect');
    socket.on('error', () => {
      /* cut by the server: expected */
    });
    // Half of a declared body, then nothing: the request stays in flight for the request timeout (a minute).
    socket.write('POST /api/session HTTP/1.1\r\nHost: x\r\nx-svc-csrf: 1\r\ncontent-type: application/json\r\n');
    socket.write('content-length: 40\r\n\r\n{"email":"a@example.com",');
    const closed = once(socket, 'close');
    const exited = new Promise<number | null>((r) => server.proc.on('exit', (code) => r(code)));
    const started = Date.now();
    server.proc.kill('SIGTERM');
    t.is(await exited, 0, server.stderr());
    await closed;
    // One second of drain, plus the process's own start-up of its stop: far below the minute.
    t.true(Date.now() - started < 20_000, `stopped after ${Date.now() - started} ms`);
  } finally {
    await removeDir(server.dataDir);
    await removeDir(`${server.dataDir}-config.json`);
  }
});

/**
 * What was sent is answered, however fast the answers: 50 keep-alive clients of one agent send
 * authorizations in a loop and SIGTERM lands while dozens are on the wire. Fast answers are 429s
 * (the agent is over its rate limit), given before the body is read, so each closes its connection
 * and the client connects again: at the signal most requests sit on connections the kernel has
 * completed but the server has not accepted yet. Slow answers are allows, each written to the
 * store, on kept-alive connections. Either way every request written whole before the signal is
 * answered (never reset), every answer once readiness says draining carries `connection: close`,
 * a client's only failure is a new connection refused, and the process exits 0 within
 * server.shutdownTimeoutMs.
 */
async function drainsWhatWasSent(t: ExecutionContext, answers: 'fast' | 'slow'): Promise<void> {
  t.timeout(180_000);
  const shutdownTimeoutMs = 10_000;
  const server = await startServer({
    env: { SVC_GATE_RATE_PER_MINUTE: answers === 'fast' ? '1' : '100000000' },
    config: { server: { shutdownTimeoutMs }, load: { sampleIntervalMs: 0 } },
  });
  try {
    const exited = new Promise<number | null>((r) => server.proc.on('exit', (code) => r(code)));
    const agent = await createAgent(server, [
      { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 },
    ]);
    const expected = answers === 'fast' ? 429 : 200;
    // The agent's one authorization of the minute, spent before the load.
    if (answers === 'fast')
      await send(server.url, false, 'POST', '/v1/actions/authorize', bearer(agent.key), payment(100));
    const pool = new Agent({ keepAlive: true, maxSockets: 50 });
    const probe = new Agent({ keepAlive: true, maxSockets: 1 });
    type Sent = Awaited<ReturnType<typeof send>> & { startedAt: number; doneAt: number };
    const sent: Sent[] = [];
    let answered = 0;
    let midLoad!: () => void;
    const loaded = new Promise<void>((r) => {
      midLoad = r;
    });
    const client = async (c: number) => {
      for (let n = 0; ; n++) {
        const startedAt = performance.now();
        const res = await send(
          server.url,
          pool,
          'POST',
          '/v1/actions/authorize',
          bearer(agent.key),
          payment(100, { idempotencyKey: `${answers}-c${c}-${n}` }),
        );
        sent.push({ ...res, startedAt, doneAt: performance.now() });
        if (res.error !== undefined) return;
        if (++answered === 400) midLoad();
      }
    };
    const clients = Array.from({ length: 50 }, (_, c) => client(c));
    await Promise.race([loaded, Promise.all(clients)]);
    t.true(answered >= 400, 'the load was running when the signal was sent');
    t.is((await send(server.url, probe, 'GET', '/readyz', {})).status, 200);

    const signalAt = performance.now();
    server.proc.kill('SIGTERM');
    let ready = await send(server.url, probe, 'GET', '/readyz', {});
    while (ready.status === 200) ready = await send(server.url, probe, 'GET', '/readyz', {});
    const drainingAt = performance.now();
    t.is(ready.status, 503, ready.error);
    await Promise.all(clients);
    const code = await exited;
    const stoppedIn = performance.now() - signalAt;
    pool.destroy();
    probe.destroy();

    const before = sent.filter((s) => s.writtenAt !== undefined && s.writtenAt < signalAt);
    const onTheWire = before.filter((s) => s.doneAt > signalAt);
    const failed = sent.filter((s) => s.error !== undefined);
    const counts = {
      sent: sent.length,
      writtenBeforeSignal: before.length,
      onTheWireAtSignal: onTheWire.length,
      unansweredBeforeSignal: before.filter((s) => s.error !== undefined).length,
      answered: sent.length - failed.length,
      refused: failed.filter((s) => s.error!.startsWith('ECONNREFUSED')).length,
      reset: failed.filter((s) => s.error!.startsWith('ECONNRESET')).length,
      stoppedInMs: Math.round(stoppedIn),
    };
    t.log(`${answers} answers:`, counts);
    t.true(onTheWire.length > 0, 'requests were on the wire when the signal was sent');
    t.deepEqual(
      before.filter((s) => s.error !== undefined).map((s) => s.error),
      [],
      'every request written before the signal was answered',
    );
    t.deepEqual(
      sent.filter((s) => s.error === undefined && s.status !== expected).map((s) => s.status),
      [],
      `every answer is a whole ${expected}`,
    );
    t.deepEqual(
      sent.filter((s) => s.error === undefined && s.startedAt > drainingAt && s.headers?.connection !== 'close'),
      [],
      'every answer sent during the drain carries connection: close',
    );
    // A new connection made after the signal may be refused, or, in the moment the listening
    // socket closes (a loaded machine widens it), reset before any request is read; a request
    // on a connection already open is never cut (and every request written before the signal is
    // answered, above).
    t.deepEqual(
      failed.filter((s) => s.reused || !/^(ECONNREFUSED|ECONNRESET)/.test(s.error!)).map((s) => s.error),
      [],
      'a client meets only a new connection refused or reset, never a cut request',
    );
    t.is(code, 0, server.stderr());
    t.true(stoppedIn < shutdownTimeoutMs, `stopped ${Math.round(stoppedIn)} ms after the signal`);
  } finally {
    if (server.proc.exitCode === null) server.proc.kill('SIGKILL');
    await removeDir(server.dataDir);
    await removeDir(`${server.dataDir}-config.json`);
  }
}

test('SIGTERM while fast answers (429) are on the wire: every request sent before it is answered, none reset', async (t) => {
  await drainsWhatWasSent(t, 'fast');
});

test('SIGTERM while slow answers (allows written to the store) are on the wire: every request sent before it is answered', async (t) => {
  await drainsWhatWasSent(t, 'slow');
});

test('SIGTERM with an idle keep-alive connection: it stays open, a request sent on it after the signal is answered with connection: close, then exit 0', async (t) => {
  const server = await startServer({ config: { load: { sampleIntervalMs: 0 } } });
  try {
    const exited = new Promise<number | null>((r) => server.proc.on('exit', (code) => r(code)));
    const idle = new Agent({ keepAlive: true, maxSockets: 1 });
    const first = await send(server.url, idle, 'GET', '/healthz', {});
    t.is(first.status, 200);
    t.not(first.headers?.connection, 'close');
    server.proc.kill('SIGTERM');
    // The drain has begun (new connections are refused) while the connection sat idle.
    const fresh = await poll(
      () => send(server.url, false, 'GET', '/healthz', {}),
      (res) => res.error !== undefined,
    );
    t.regex(fresh.error ?? `answered ${fresh.status}`, /^ECONNREFUSED/);
    const late = await send(server.url, idle, 'GET', '/readyz', {});
    t.true(late.reused, 'sent on the connection opened before the signal');
    t.is(late.error, undefined, 'the idle connection was not cut');
    t.is(late.status, 503);
    t.is(late.headers?.connection, 'close');
    t.is(await exited, 0, server.stderr());
    idle.destroy();
  } finally {
    if (server.proc.exitCode === null) server.proc.kill('SIGKILL');
    await removeDir(server.dataDir);
    await removeDir(`${server.dataDir}-config.json`);
  }
});
