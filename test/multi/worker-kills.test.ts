import test from 'ava';
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import { createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { bearer } from '../helpers/http.js';
import { killQuietly, removeDir, startServer, svc, workersOf, type RunningServer } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { SERVER_ENV } from './suite.js';

/**
 * `svc serve --workers 2` on one LMDB file, one worker killed with SIGKILL again and again while
 * clients send decisions: what every client was told allowed is in the store afterwards, and every
 * request got an answer or a connection error, never silence.
 */

const KILLS = Number(process.env.SVC_TEST_WORKER_KILLS ?? 100);
// A request with no answer after this long is one left hanging (the server answers in milliseconds).
const ANSWER_WITHIN_MS = 20_000;
const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

const servers: RunningServer[] = [];
// The clients' stop: also set when the test fails midway, so that they do not keep it running.
const stop = { now: false };
test.after.always(async () => {
  stop.now = true;
  for (const s of servers) {
    if (process.env.SVC_TEST_KEEP_LOG)
      (await import('node:fs')).writeFileSync(`${process.env.SVC_TEST_KEEP_LOG}-${s.proc.pid}.log`, s.stderr());
    const workers = s.proc.exitCode === null ? workersOf(s.proc.pid!) : [];
    s.proc.kill('SIGKILL');
    for (const pid of workers) killQuietly(pid);
    await s.stop('SIGKILL');
    await removeDir(s.dataDir);
  }
});

/** What the clients saw: the allows acknowledged, with the request that got each. */
interface Acknowledged {
  key: AgentFixture;
  idempotencyKey: string;
  amount: number;
  actionId: string;
}

interface Tally {
  acknowledged: Acknowledged[];
  /** Answers other than an allow, by status and code. */
  otherAnswers: Map<string, number>;
  /** Connection errors, by code (ECONNREFUSED: the port refused). */
  connectionErrors: Map<string, number>;
  /** Requests with neither an answer nor a connection error in time, or another failure. */
  unanswered: string[];
}

const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

function authorizeOnce(
  dispatcher: Agent,
  server: RunningServer,
  fx: AgentFixture,
  key: string,
  amount: number,
  fresh = false,
) {
  return request(`${server.url}/v1/actions/authorize`, {
    method: 'POST',
    dispatcher,
    // `fresh`: a new connection for each request (the port's refusals show on these).
    reset: fresh,
    headers: { ...bearer(fx.key), 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(payment(amount)),
    headersTimeout: ANSWER_WITHIN_MS,
    bodyTimeout: ANSWER_WITHIN_MS,
  });
}

/** One client: decisions one after another on a kept-alive connection (or a new one each) until `stop`. */
async function client(server: RunningServer, fx: AgentFixture, tally: Tally, stop: { now: boolean }, fresh: boolean) {
  const dispatcher = new Agent({ connections: 1 });
  try {
    while (!stop.now) {
      const idempotencyKey = randomUUID();
      const amount = 1 + (tally.acknowledged.length % 50);
      try {
        const res = await authorizeOnce(dispatcher, server, fx, idempotencyKey, amount, fresh);
        const body = (await res.body.json()) as { id?: string; decision?: string; error?: { type?: string } };
        if (res.statusCode === 200 && body.decision === 'allow' && body.id)
          tally.acknowledged.push({ key: fx, idempotencyKey, amount, actionId: body.id });
        else count(tally.otherAnswers, `${res.statusCode} ${body.error?.type ?? body.decision ?? ''}`);
      } catch (err) {
        const code = (err as { code?: string }).code ?? '';
        if (CONNECTION_ERRORS.has(code)) count(tally.connectionErrors, code);
        else tally.unanswered.push(`${code} ${(err as Error).message}`);
      }
    }
  } finally {
    await dispatcher.close();
  }
}

/**
 * How many `listening` lines the server has logged: read on from where the last call stopped (the
 * log grows by a line per request, and is polled every few milliseconds).
 */
const seen = new Map<RunningServer, { upTo: number; count: number }>();
function listeningLines(server: RunningServer): number {
  const log = server.stderr();
  const at = seen.get(server) ?? { upTo: 0, count: 0 };
  // Whole lines only: the last one may be partial still.
  const upTo = log.lastIndexOf('\n') + 1;
  if (upTo > at.upTo) at.count += (log.slice(at.upTo, upTo).match(/"msg":"listening"/g) ?? []).length;
  at.upTo = Math.max(at.upTo, upTo);
  seen.set(server, at);
  return at.count;
}

test('two workers, one killed with SIGKILL 100 times under load: every allow acknowledged is stored, every request answered or refused by a connection error', async (t) => {
  t.timeout(600_000);
  const began = Date.now();
  // The agents are made by a one-process server first: this test is about workers dying, not the
  // first start.
  const env = { ...SERVER_ENV, SVC_GATE_RATE_PER_MINUTE: '1000000' };
  const first = await startServer({ env });
  servers.push(first);
  const rules = [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], maxAmount: 5000 }];
  const busy = await createAgent(first, rules, 'busy-bot');
  const other = await createAgent(first, rules, 'other-bot');
  t.is(await first.stop(), 0);
  const server = await startServer({ args: ['--workers', '2'], env, dataDir: first.dataDir });
  servers.push(server);
  const tally: Tally = { acknowledged: [], otherAnswers: new Map(), connectionErrors: new Map(), unanswered: [] };
  // Three clients on one agent (one ledger, its head contended by both workers), one on another,
  // and one that opens a new connection for each request.
  const clients = [busy, busy, busy, other, busy].map((fx, i) => client(server, fx, tally, stop, i === 4));

  // Each worker start logs `listening`, and the primary once: 3 when both workers are up.
  const up = await poll(
    () => listeningLines(server),
    (n) => n >= 3,
  );
  t.is(up, 3);
  // How long a round took, and how long of it the replacement took to listen.
  const roundTimes: number[] = [];
  const replacements: number[] = [];
  for (let kill = 1; kill <= KILLS; kill++) {
    const round = Date.now();
    const workers = workersOf(server.proc.pid!);
    t.is(workers.length, 2, `round ${kill}: two workers before the kill`);
    const acknowledgedBefore = tally.acknowledged.length;
    // Some decisions under way on both workers first.
    await poll(
      () => tally.acknowledged.length,
      (n) => n >= acknowledgedBefore + 4,
      { timeoutMs: 10_000, everyMs: 5 },
    );
    killQuietly(workers[kill % 2]!);
    const killed = Date.now();
    // The replacement is up when it logs `listening`.
    const listening = await poll(
      () => listeningLines(server),
      (n) => n >= 3 + kill,
      { timeoutMs: 30_000, everyMs: 20 },
    );
    if (listening < 3 + kill) t.fail(`round ${kill}: no replacement worker listened within 30 s`);
    roundTimes.push(Date.now() - round);
    replacements.push(Date.now() - killed);
  }
  stop.now = true;
  await Promise.all(clients);
  const loadEnded = Date.now();

  const log = server.stderr();
  t.log(
    `${KILLS} kills in ${Math.round((loadEnded - began) / 1000)} s (a round: median ${median(roundTimes)} ms, of which the replacement's start ` +
      `${median(replacements)} ms); ` +
      `${tally.acknowledged.length} allows acknowledged; other answers ${JSON.stringify([...tally.otherAnswers])}; ` +
      `connection errors ${JSON.stringify([...tally.connectionErrors])}; ${tally.unanswered.length} unanswered; ` +
      `replacements listening ${listeningLines(server) - 3}; store_damaged in the log ` +
      `${(log.match(/store_damaged|store file damaged/g) ?? []).length}, failed checkpoints ` +
      `${(log.match(/ledger checkpoint failed/g) ?? []).length}`,
  );
  // What the workers logged at error level, for a failure's reader (the first few lines).
  const errors = log.split('\n').filter((line) => /"level":(50|60)/.test(line));
  if (errors.length > 0)
    t.log(`${errors.length} error lines; the first:\n${errors.slice(0, 5).join('\n').slice(0, 4000)}`);
  t.deepEqual(tally.unanswered, [], 'every request got an answer or a connection error');
  t.is(tally.connectionErrors.get('ECONNREFUSED') ?? 0, 0, 'the port never refused a connection while a worker lived');
  // A worker that sheds load (its event loop past the lag limit on this loaded machine) answers
  // 503 overloaded with retry-after, which a client retries: an answer, and nothing was decided.
  t.deepEqual(
    [...tally.otherAnswers].filter(([answer]) => answer !== '503 overloaded'),
    [],
    `every answer was an allow, or a shed request (503 overloaded); the first error lines the workers logged:\n${errors
      .slice(0, 3)
      .join('\n')
      .slice(0, 3000)}`,
  );
  t.false(/store_damaged|store file damaged/.test(log), 'no worker found the store damaged');
  t.false(/ledger checkpoint failed/.test(log), 'every checkpoint was signed');
  t.is(listeningLines(server), 3 + KILLS, 'every replacement started at its first try');

  // Every acknowledged allow is readable, and its idempotency key gives the same action.
  const lost: string[] = [];
  const reader = new Agent({ connections: 4 });
  const acknowledged = [...tally.acknowledged];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let ack = acknowledged.pop(); ack; ack = acknowledged.pop()) {
        const read = await request(`${server.url}/v1/actions/${ack.actionId}`, {
          dispatcher: reader,
          headers: bearer(ack.key.key),
        });
        const stored = (await read.body.json()) as { id?: string; decision?: string };
        if (read.statusCode !== 200 || stored.id !== ack.actionId || stored.decision !== 'allow')
          lost.push(`${ack.actionId}: GET ${read.statusCode}`);
        const again = await authorizeOnce(reader, server, ack.key, ack.idempotencyKey, ack.amount);
        const replay = (await again.body.json()) as { id?: string };
        if (again.statusCode !== 200 || replay.id !== ack.actionId)
          lost.push(`${ack.actionId}: the same idempotency key gave ${again.statusCode} ${replay.id}`);
      }
    }),
  );
  await reader.close();
  t.log(`${lost.length} of them not stored`);
  t.deepEqual(lost, [], 'every acknowledged allow is stored');

  t.is(await server.stop(), 0);
  const verify = await svc(['ledger', 'verify', '--data-dir', server.dataDir, '--json'], { timeoutMs: 120_000 });
  t.is(verify.code, 0, verify.stdout + verify.stderr);
  t.log(`checked in ${Math.round((Date.now() - loadEnded) / 1000)} s`);
});

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
