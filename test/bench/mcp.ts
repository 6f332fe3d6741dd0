/**
 * Benchmark: the OAuth token endpoint under rotating refresh grants, and a tool call proxied
 * through /mcp against the same call sent straight to the upstream MCP server.
 *
 * Four processes, so that no two share an event loop or a JIT: the real `svc serve` from dist/
 * (mcp-fixture.ts: first start, info-level request logs, an agent with a mandate for
 * `mcp.files.echo`, the upstream added as `files` with a secret and an allow-list), the fixture
 * upstream MCP server (mcp-upstream-server.ts), a bare hapi server (bare-server.ts), and this
 * process driving them on 127.0.0.1 with closed loops (mcp-load.ts), in alternating rounds.
 *
 * - Refresh grants: CHAINS OAuth connections made up front as an MCP client makes one
 *   (registration, consent, code exchange); then each connection's chain of refresh grants,
 *   sequential (each grant spends the refresh token the one before it returned), all chains at
 *   once. Every grant must answer 200 with a new refresh token; a chain whose grant failed stops,
 *   since reusing a spent token would end its connection (but for load shedding, which refuses
 *   before any handler runs: counted as failed, and the chain goes on with its unspent token). Beside it, POST /bare/echo answering
 *   a form of the same size with a JSON answer of the grant's size. Afterwards every chain's last
 *   access token must work at /mcp, and no connection may have ended.
 * - tools/call: the same JSON-RPC request (`files__echo` at /mcp with the agent's key; `echo`
 *   straight to the upstream with its secret), raw POSTs without initialize (the transports are
 *   stateless; the preflight checks it and falls back to an initialize before each call if not).
 *   Each answer's body is judged: the echoed text, not `isError`, not a JSON-RPC error. The
 *   upstream's tool-call count must grow by exactly the calls answered.
 * Prints every number, then each goal as PASS or BELOW. Exits 1 when a goal is missed or any
 * request failed, after printing all. BENCH_CPU_PROF_DIR=dir: svc serve runs with --cpu-prof.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bearer, call } from '../helpers/http.js';
import { cleanEnv } from '../helpers/process.js';
import { expect, startChild, watch, type Child } from './children.js';
import { CLK_TCK } from './gateway-load.js';
import { cpuMicros, failed, micros, ms, table, times } from './gateway-report.js';
import {
  connect,
  refreshForm,
  startMcpBench,
  TOOL,
  UPSTREAM_NAME,
  type Connection,
  type McpBench,
} from './mcp-fixture.js';
import {
  closedLoop,
  fixedLane,
  notOk,
  type Answer,
  type Lane,
  type Looped,
  type LoopTarget,
  type Shape,
} from './mcp-load.js';
import { goalsTable, verdict, type Goal } from './report.js';

const SHAPE: Shape = { connections: 16, warmupSeconds: 1, roundSeconds: 3, rounds: 4 };
const GOALS = { grantsPerSecond: 700, proxied: 0.9 };
const SECRET = 'bench-upstream-secret-0123';
const TEXT = 'Summarize ticket 4521: the customer cannot sign in since the v2.3 update.';
const MCP_HEADERS = {
  accept: 'application/json, text/event-stream',
  'content-type': 'application/json',
  'mcp-protocol-version': '2025-11-25',
};
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'svc-bench', version: '1.0.0' } },
});
const toolCall = (name: string) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { text: TEXT } } });

const profileDir = process.env.BENCH_CPU_PROF_DIR;
const nodeFlags = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${resolve(profileDir)}`] : [];
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

/** The first answer of each kind of failure, to print beside the counts. */
const samples = new Map<string, string>();
const bad = (why: string, text: string) => {
  if (!samples.has(why)) samples.set(why, text.slice(0, 300));
  return why;
};

/** Why a refresh grant's answer is not a new pair of tokens; undefined when it is (and `c` now holds it). */
function grantProblem(c: Connection, answer: Answer): string | undefined {
  const status = notOk(answer);
  if (status !== undefined) return bad(status, 'text' in answer ? answer.text : answer.error);
  const { text } = answer as { text: string };
  let body: { refresh_token?: unknown; access_token?: unknown };
  try {
    body = JSON.parse(text);
  } catch {
    return bad('unparsable answer', text);
  }
  if (
    typeof body.refresh_token !== 'string' ||
    !body.refresh_token.startsWith('art_') ||
    body.refresh_token === c.refresh ||
    typeof body.access_token !== 'string'
  )
    return bad('no new refresh token', text);
  c.refresh = body.refresh_token;
  c.access = body.access_token;
  return undefined;
}

/** A 503 `overloaded`: the server shed the request before routing it. */
function shed(answer: Answer): boolean {
  if ('error' in answer || answer.status !== 503) return false;
  try {
    return JSON.parse(answer.text).error?.type === 'overloaded';
  } catch {
    return false;
  }
}

/** A connection's chain of refresh grants: each spends the refresh token the one before returned. */
function chainLane(c: Connection): Lane {
  const lane: Lane = {
    stopped: false,
    next: () => refreshForm(c),
    judge(answer) {
      const why = grantProblem(c, answer);
      // Whether a failed grant spent the token is unknown: sending it again could end the
      // connection. Except load shedding: hapi refuses at dispatch, before any handler runs, so
      // the token is unspent and the chain goes on with it (the refusal still counts as failed).
      if (why !== undefined && !shed(answer)) lane.stopped = true;
      return why;
    },
  };
  return lane;
}

/** The JSON-RPC answer to request id 1, from a JSON body or from an event stream's messages. */
function rpcAnswer(answer: {
  contentType: string;
  text: string;
}): { result?: { isError?: boolean; content?: Array<{ text?: string }> }; error?: { code: number } } | undefined {
  try {
    if (!answer.contentType.includes('text/event-stream')) return JSON.parse(answer.text);
    for (const line of answer.text.split('\n')) {
      if (!line.startsWith('data:')) continue;
      const message = JSON.parse(line.slice(5));
      if (message.id === 1 && ('result' in message || 'error' in message)) return message;
    }
  } catch {
    /* counted below */
  }
  return undefined;
}

/** A tools/call answer is the echoed text: not a refusal, not a JSON-RPC error. */
function judgeToolCall(answer: Answer): string | undefined {
  const status = notOk(answer);
  if (status !== undefined) return bad(status, 'text' in answer ? answer.text : answer.error);
  const a = answer as { contentType: string; text: string };
  const rpc = rpcAnswer(a);
  if (!rpc) return bad('no JSON-RPC answer', a.text);
  if (rpc.error) return bad(`JSON-RPC error ${rpc.error.code}`, a.text);
  if (rpc.result?.isError) return bad('tool result isError', a.text);
  if (rpc.result?.content?.[0]?.text !== TEXT) return bad('wrong tool result', a.text);
  return undefined;
}

async function post(url: string, headers: Record<string, string>, body: string): Promise<Answer> {
  const u = new URL(url);
  const r = await call(u.origin, 'POST', u.pathname + u.search, { headers, body });
  return { status: r.status, contentType: String(r.headers['content-type'] ?? ''), text: r.text };
}

interface Part1 {
  token: Looped;
  bare: Looped;
  answerBytes: number;
  /** Chains whose last access token did not work at /mcp afterwards, and connections that ended. */
  deadTokens: number;
  ended: number;
}

async function refreshGrants(bench: McpBench, bare: Child<{ listening: string }>): Promise<Part1> {
  const base = bench.server.url;
  // Preflight on a connection of its own: a grant rotates the pair and stops the old access token.
  const probe = await connect(bench, 'bench preflight');
  const before = { ...probe };
  const first = await post(`${base}/oauth/token`, FORM, refreshForm(probe));
  expect('refresh grant', !('error' in first) && first.status === 200, JSON.stringify(first));
  const granted = JSON.parse((first as { text: string }).text);
  expect(
    'refresh grant',
    granted.refresh_token !== before.refresh && String(granted.refresh_token).startsWith('art_'),
    (first as { text: string }).text,
  );
  const mcpStatus = async (token: string) =>
    (
      await call(base, 'POST', '/mcp', {
        headers: { ...MCP_HEADERS, ...bearer(token) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
    ).status;
  expect('the old access token after a grant', (await mcpStatus(before.access)) === 401, 'still works');
  expect('the new access token', (await mcpStatus(granted.access_token)) === 200, 'refused');
  const answerBytes = Buffer.byteLength((first as { text: string }).text);
  // The baseline is sent a form of the same length (a spent token) and answers as many bytes.
  const sampleForm = refreshForm(before);
  const bareUrl = `${bare.url}/bare/echo?size=${answerBytes}`;
  const bareAnswer = await post(bareUrl, FORM, sampleForm);
  expect(
    'bare echo',
    !('error' in bareAnswer) && bareAnswer.status === 200 && Buffer.byteLength(bareAnswer.text) === answerBytes,
    JSON.stringify(bareAnswer),
  );
  console.log(
    `refresh grant: form ${sampleForm.length} bytes, answer ${answerBytes} bytes (bare echo answers ${Buffer.byteLength((bareAnswer as { text: string }).text)})`,
  );

  const connections: Connection[] = [];
  for (let i = 0; i < SHAPE.connections; i += 1) connections.push(await connect(bench, `bench client ${i + 1}`));
  const token: LoopTarget = {
    name: 'POST /oauth/token (svc, refresh grant)',
    url: `${base}/oauth/token`,
    headers: FORM,
    lanes: connections.map(chainLane),
    pids: [bench.server.child.pid!],
  };
  const baseline: LoopTarget = {
    name: 'POST /bare/echo (bare hapi, form)',
    url: bareUrl,
    headers: FORM,
    pids: [bare.child.pid!],
    lanes: connections.map(() =>
      fixedLane(
        sampleForm,
        (a) =>
          notOk(a) ??
          (Buffer.byteLength((a as { text: string }).text) === answerBytes
            ? undefined
            : bad('wrong size', (a as { text: string }).text)),
      ),
    ),
  };
  const [t, b] = (await closedLoop([token, baseline], SHAPE)) as [Looped, Looped];

  let deadTokens = 0;
  for (const c of connections) if ((await mcpStatus(c.access)) !== 200) deadTokens += 1;
  const listed = await call(base, 'GET', `/api/w/${bench.workspaceId}/connections`, {
    headers: { cookie: bench.cookie },
  });
  const ids = new Set(connections.map((c) => c.clientId));
  const ended =
    listed.status !== 200
      ? -1
      : (listed.body.data as Array<{ clientId: string; endedAt: string | null }>).filter(
          (x) => ids.has(x.clientId) && x.endedAt !== null,
        ).length;
  return { token: t, bare: b, answerBytes, deadTokens, ended };
}

interface Part2 {
  direct: Looped;
  proxied: Looped;
  initialize: boolean;
  forwarded: number;
}

async function toolCalls(bench: McpBench, upstream: Child<{ listening: string; control: string }>): Promise<Part2> {
  const count = async () => (await call(upstream.boot.control, 'GET', '/count')).body.count as number;
  const direct: LoopTarget = {
    name: 'upstream MCP, direct',
    url: upstream.url,
    headers: { ...MCP_HEADERS, ...bearer(SECRET) },
    lanes: [],
    pids: [upstream.child.pid!],
  };
  const proxied: LoopTarget = {
    name: `svc /mcp, proxied (${UPSTREAM_NAME}__${TOOL})`,
    url: `${bench.server.url}/mcp`,
    headers: { ...MCP_HEADERS, ...bearer(bench.key) },
    lanes: [],
    pids: [bench.server.child.pid!, upstream.child.pid!],
  };
  const bodies = new Map([
    [direct, toolCall(TOOL)],
    [proxied, toolCall(`${UPSTREAM_NAME}__${TOOL}`)],
  ]);

  // Without initialize first: the stateless transports should answer a lone tools/call.
  let initialize = false;
  for (const [t, body] of bodies) {
    const answer = await post(t.url, t.headers, body);
    const why = judgeToolCall(answer);
    if (why === undefined) {
      console.log(
        `${t.name}: a lone tools/call answered 200 ${(answer as { contentType: string }).contentType}, ${Buffer.byteLength((answer as { text: string }).text)} bytes`,
      );
      continue;
    }
    const init = await post(t.url, t.headers, INITIALIZE);
    const again = await post(t.url, t.headers, body);
    expect(
      `${t.name} tools/call`,
      !('error' in init) && init.status === 200 && judgeToolCall(again) === undefined,
      `${why}; with initialize first: ${JSON.stringify(again)}`,
    );
    console.log(
      `${t.name}: a lone tools/call was refused (${why}); every call is sent after an initialize on its connection, timed as one`,
    );
    initialize = true;
  }
  for (const t of [direct, proxied]) {
    t.lanes = Array.from({ length: SHAPE.connections }, () => fixedLane(bodies.get(t)!, judgeToolCall));
    if (initialize) t.prelude = INITIALIZE;
  }
  const before = await count();
  const [d, p] = (await closedLoop([direct, proxied], SHAPE)) as [Looped, Looped];
  return { direct: d, proxied: p, initialize, forwarded: (await count()) - before };
}

const cpuCell = (m: Looped, k: number) => micros(cpuMicros(m.cpuTicks[k]!, m.requests));

async function main(): Promise<number> {
  const { connections, warmupSeconds, roundSeconds, rounds } = SHAPE;
  console.log(
    `MCP benchmark: svc serve (dist/, first start, info logs), the fixture upstream MCP server and a bare hapi server, each its own process, Node ${process.version}`,
  );
  console.log(
    `closed loops: ${connections} connections, each sending its next request once its answer is read and judged; ${warmupSeconds} s warm-up + ${rounds} x ${roundSeconds} s alternating rounds; latency sub-ms (performance.now())`,
  );
  console.log(
    `server CPU: utime + stime of each process (/proc, ${CLK_TCK} ticks/s) over the measured rounds / answers`,
  );
  console.log(`machine: ${availableParallelism()} CPUs, load average ${load()} at start\n`);

  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-mcp-'));
  const started: Array<{ stop(): Promise<void> }> = [];
  const stopping = { now: false };
  try {
    const upstream = await startChild<{ listening: string; control: string }>(
      ['--import=tsx', here('./mcp-upstream-server.ts'), SECRET],
      cleanEnv(),
    );
    started.push(upstream);
    watch('the upstream', upstream, stopping);
    const bare = await startChild<{ listening: string }>(['--import=tsx', here('./bare-server.ts')], cleanEnv());
    started.push(bare);
    watch('the bare server', bare, stopping);
    const bench = await startMcpBench(dataDir, { url: upstream.url, secret: SECRET }, nodeFlags);
    started.push(bench.server);
    const svcLog = watch('svc serve', bench.server, stopping);

    const one = await refreshGrants(bench, bare);
    const two = await toolCalls(bench, upstream);
    console.log(`load average ${load()} at the end\n`);

    console.log(
      table(
        [
          `refresh grants, ${connections} chains`,
          'req/s',
          'vs bare',
          'p50 ms',
          'p99 ms',
          'requests',
          'CPU µs/req',
          'failed',
          'chains stopped',
        ],
        [one.token, one.bare].map((m) => [
          m.name,
          m.rps.toFixed(0),
          times(m.rps, one.bare.rps),
          ms(m.p50),
          ms(m.p99),
          String(m.requests),
          cpuCell(m, 0),
          failed(m.bad),
          String(m.stopped),
        ]),
      ),
    );
    console.log(
      `after the grants: ${connections - one.deadTokens} of ${connections} chains' last access tokens work at /mcp; ${one.ended} connections ended\n`,
    );
    console.log(
      table(
        [
          `tools/call, ${connections} connections`,
          'req/s',
          'vs direct',
          'p50 ms',
          'p99 ms',
          'requests',
          'svc CPU µs/req',
          'upstream CPU µs/req',
          'failed',
        ],
        [two.direct, two.proxied].map((m) => {
          const proxied = m === two.proxied;
          return [
            m.name,
            m.rps.toFixed(0),
            times(m.rps, two.direct.rps),
            ms(m.p50),
            ms(m.p99),
            String(m.requests),
            proxied ? cpuCell(m, 0) : '-',
            cpuCell(m, proxied ? 1 : 0),
            failed(m.bad),
          ];
        }),
      ),
    );
    const answered = two.direct.answeredAll + two.proxied.answeredAll;
    console.log(
      `upstream tool calls run: ${two.forwarded} (direct and proxied calls answered, warm-ups included: ${answered})${two.initialize ? '; each call after an initialize' : '; no initialize sent'}`,
    );
    console.log(
      `svc serve error-level log lines: ${svcLog.errors}${svcLog.firstErrors.map((l) => `\n  ${l}`).join('')}\n`,
    );

    const ratio = two.proxied.rps / two.direct.rps;
    const goals: Goal[] = [
      {
        benchmark: `refresh grants, ${connections} chains`,
        measured: `${one.token.rps.toFixed(0)} grants/s (bare ${one.bare.rps.toFixed(0)} req/s)`,
        goal: `>= ${GOALS.grantsPerSecond} grants/s`,
        met: one.token.rps >= GOALS.grantsPerSecond,
      },
      {
        benchmark: `proxied tools/call, ${connections} conn`,
        measured: `${ratio.toFixed(2)} of direct req/s (${two.proxied.rps.toFixed(0)} vs ${two.direct.rps.toFixed(0)})`,
        goal: `>= ${GOALS.proxied.toFixed(2)}`,
        met: ratio >= GOALS.proxied,
      },
    ];
    console.log(goalsTable(goals));

    const all = [one.token, one.bare, two.direct, two.proxied];
    const failures = all.reduce((n, m) => n + Object.values(m.bad).reduce((a, b) => a + b, 0), 0);
    const problems: string[] = [];
    if (failures > 0) problems.push(`${failures} requests failed (see "failed" above)`);
    if (one.token.stopped > 0) problems.push(`${one.token.stopped} refresh chains stopped after a failed grant`);
    if (one.deadTokens > 0) problems.push(`${one.deadTokens} chains' last access tokens do not work at /mcp`);
    if (one.ended !== 0)
      problems.push(
        one.ended < 0 ? 'the connections list could not be read' : `${one.ended} connections ended during the grants`,
      );
    if (failures === 0 && two.forwarded !== answered)
      problems.push(`the upstream ran ${two.forwarded} tool calls for ${answered} answered`);
    const missed = goals.filter((g) => !g.met);
    if (missed.length > 0) problems.push(`below goal: ${missed.map((g) => g.benchmark).join(', ')}`);
    console.log('');
    for (const [why, text] of samples) console.log(`first "${why}" answer: ${text}`);
    return verdict(problems);
  } finally {
    stopping.now = true;
    for (const child of started.reverse()) await child.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
