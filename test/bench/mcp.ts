/**
 * Benchmark: the OAuth token endpoint under rotating refresh grants (one at a time, and two at
 * once per step), and a tool call proxied through /mcp against the same call sent straight to the
 * upstream MCP server, at both protocol versions (2025-11-25 and 2026-07-28).
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
 *   once. Beside it, CHAINS more connections whose every step sends its refresh token twice at
 *   once, on two connections, as two instances of one MCP client refreshing together do: within
 *   the grace window (oauth.refreshGraceSeconds) both must answer 200 with the same new pair, and
 *   the chain goes on with it; an invalid_grant (the reuse ended the connection) is a failure. Every grant must answer 200 with a new refresh token; a chain whose grant failed stops,
 *   since reusing a spent token would end its connection (but for load shedding, which refuses
 *   before any handler runs: counted as failed, and the chain goes on with its unspent token). Beside it, POST /bare/echo answering
 *   a form of the same size with a JSON answer of the grant's size. Afterwards every chain's last
 *   access token must work at /mcp, and no connection may have ended.
 * - tools/call: the same JSON-RPC request (`files__echo` at /mcp with the agent's key; `echo`
 *   straight to the upstream with its secret), three ways. At 2025-11-25, raw POSTs without
 *   initialize (the transports are stateless; the preflight checks it and falls back to an
 *   initialize before each call if not); and at 2025-11-25 in a session, as a real client uses
 *   one: each connection sends initialize and notifications/initialized first, then every call
 *   carries the Mcp-Session-Id answered (none from a stateless upstream). At 2026-07-28, the
 *   request exactly as @modelcontextprotocol/client pinned to 2026-07-28 sends it (the per-request `_meta` envelope,
 *   the Mcp-Method and Mcp-Name headers), captured from one real call of that client to each
 *   target; the upstream serves both eras (mcp-upstream-server.ts), so svc speaks 2026-07-28 to it.
 *   Each answer's body is judged: the echoed text, not `isError`, not a JSON-RPC error. The
 *   upstream's tool-call count must grow by exactly the calls answered. Each way runs at one
 *   connection (the goals: p50 ratio and added p99 of a call with no queue in front of it), then
 *   at SHAPE's connections (throughput, CPU per call); the upstream's requests by method
 *   (GET and DELETE included) are read around each measured round: its requests per proxied call.
 *   BENCH_MCP_ONLY=tools: the tool calls alone, without the refresh grants (a shorter run).
 * Prints every number, then each goal as PASS or BELOW (a goal below is reported, not a failure).
 * Exits 1 when any request failed, after printing all (the 2026-07-28 and concurrent-refresh figures have no goal;
 * their failures count as any other's). BENCH_CPU_PROF_DIR=dir: svc serve runs with --cpu-prof.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { bearer, call } from '../helpers/http.js';
import { cleanEnv } from '../helpers/process.js';
import { expect, startChild, watch, type Child } from './children.js';
import { CLK_TCK } from './gateway-load.js';
import { cpuMicros, failed, micros, ms, plusMs, table, times } from './gateway-report.js';
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
/** The tool calls: six targets, each at one connection and then at SHAPE's, in rounds of 2 s. */
const TOOL_SHAPE: Shape = { ...SHAPE, roundSeconds: 2 };
/**
 * Issue 23: refresh grants >= 1,000/s with p99 <= 100 ms; a proxied tools/call (2025-11-25) at most
 * 1,000 µs of svc CPU and at least 0.5 of the direct call's req/s. Issue 34: a proxied call at one
 * connection at most 1.3x the direct call's p50 and 2 ms over its p99, in each era and mode, and
 * one upstream request per warm call (what else the upstream receives under 0.01 per call).
 */
const GOALS = {
  grantsPerSecond: 1000,
  grantsP99: 100,
  proxied: 0.5,
  proxiedCpuMicros: 1000,
  p50Ratio: 1.3,
  p99AddedMs: 2,
  upstreamRequests: 1,
  upstreamOther: 0.01,
};
/** BENCH_MCP_ONLY=tools: the tool calls alone (a shorter run), without the refresh grants. */
const grantsToo = process.env.BENCH_MCP_ONLY !== 'tools';
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
/** The 2026-07-28 revision, which the v2 client is pinned to. */
const MODERN = '2026-07-28';
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

type Pair = { refresh: string; access: string };

/** The new pair of tokens a refresh grant answered, or why its answer is not one (a refusal that ended the connection says so). */
function newPair(c: Connection, answer: Answer): Pair | string {
  const status = notOk(answer);
  if (status !== undefined) {
    const text = 'text' in answer ? answer.text : answer.error;
    return bad(/"invalid_grant"/.test(text) ? `${status} invalid_grant (connection ended)` : status, text);
  }
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
  return { refresh: body.refresh_token, access: body.access_token };
}

/** Why a refresh grant's answer is not a new pair of tokens; undefined when it is (and `c` now holds it). */
function grantProblem(c: Connection, answer: Answer): string | undefined {
  const got = newPair(c, answer);
  if (typeof got === 'string') return got;
  c.refresh = got.refresh;
  c.access = got.access;
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

/**
 * A connection's chain of refresh grants, each step sending its refresh token twice at once (the
 * target fans out to two connections): both answers must be the same new pair (the grace window),
 * which the chain goes on with. A step some of whose answers were shed goes on with the pair the
 * others answered (or, all shed, with its unspent token); any other failure stops the chain, an
 * invalid_grant among them (the reuse ended the connection).
 */
function pairLane(c: Connection): Lane {
  const lane: Lane = {
    stopped: false,
    next: () => refreshForm(c),
    judge: (answer) => grantProblem(c, answer),
    judgeAll(answers) {
      const got = answers.map((a) => newPair(c, a));
      const pairs = got.filter((g): g is Pair => typeof g !== 'string');
      const first = pairs[0];
      const why = got.find((g): g is string => typeof g === 'string');
      if (first && pairs.some((p) => p.refresh !== first.refresh || p.access !== first.access)) {
        lane.stopped = true;
        return bad('the concurrent grants answered different pairs', JSON.stringify(pairs));
      }
      if (why === undefined || answers.every((a, i) => typeof got[i] !== 'string' || shed(a))) {
        if (first) Object.assign(c, first);
        return why;
      }
      lane.stopped = true;
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
  /** The chains whose every step sends its refresh token twice at once. */
  pairs: Looped;
  bare: Looped;
  answerBytes: number;
  /** Chains (of both kinds) whose last access token did not work at /mcp afterwards, and connections that ended. */
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

  // Two refreshes at once with one token: both must answer the same new pair (the grace window).
  const twin = await connect(bench, 'bench preflight, twin refreshes');
  const twins = await Promise.all([0, 1].map(() => post(`${base}/oauth/token`, FORM, refreshForm(twin))));
  const twinPairs = twins.map((a) => newPair(twin, a));
  expect(
    'two refresh grants at once',
    twinPairs.every((g) => typeof g !== 'string' && g.refresh === (twinPairs[0] as Pair).refresh),
    JSON.stringify(twins),
  );

  const connections: Connection[] = [];
  for (let i = 0; i < SHAPE.connections; i += 1) connections.push(await connect(bench, `bench client ${i + 1}`));
  const twinned: Connection[] = [];
  for (let i = 0; i < SHAPE.connections; i += 1) twinned.push(await connect(bench, `bench twin client ${i + 1}`));
  const token: LoopTarget = {
    name: 'POST /oauth/token (svc, refresh grant)',
    url: `${base}/oauth/token`,
    headers: FORM,
    lanes: connections.map(chainLane),
    pids: [bench.server.child.pid!],
  };
  const pairs: LoopTarget = {
    name: 'POST /oauth/token (svc, two refreshes at once)',
    url: `${base}/oauth/token`,
    headers: FORM,
    lanes: twinned.map(pairLane),
    fanOut: 2,
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
  const [t, p, b] = (await closedLoop([token, pairs, baseline], SHAPE)) as [Looped, Looped, Looped];

  let deadTokens = 0;
  for (const c of [...connections, ...twinned]) if ((await mcpStatus(c.access)) !== 200) deadTokens += 1;
  const listed = await call(base, 'GET', `/api/w/${bench.workspaceId}/connections`, {
    headers: { cookie: bench.cookie },
  });
  const ids = new Set([...connections, ...twinned, twin].map((c) => c.clientId));
  const ended =
    listed.status !== 200
      ? -1
      : (listed.body.data as Array<{ clientId: string; endedAt: string | null }>).filter(
          (x) => ids.has(x.clientId) && x.endedAt !== null,
        ).length;
  return { token: t, pairs: p, bare: b, answerBytes, deadTokens, ended };
}

/** One way of calling the tool: straight to the upstream and through svc, in one era and mode. */
interface Way {
  label: string;
  direct: LoopTarget;
  proxied: LoopTarget;
}

interface Measured2 {
  way: Way;
  /** At one connection (the goals: a call's own latency, no queue), and at SHAPE.connections (throughput, CPU). */
  one: { direct: Looped; proxied: Looped };
  many: { direct: Looped; proxied: Looped };
}

interface Part2 {
  ways: Measured2[];
  initialize: boolean;
  forwarded: number;
  answered: number;
}

async function modernToolCall(
  url: string,
  credential: string,
  name: string,
): Promise<{ headers: Record<string, string>; body: string }> {
  let captured: { headers: Record<string, string>; body: string } | undefined;
  const client = new ModernClient(
    { name: 'svc-bench', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: MODERN } } },
  );
  await client.connect(
    new ModernTransport(new URL(url), {
      requestInit: { headers: bearer(credential) },
      fetch: async (input, init) => {
        const body = typeof init?.body === 'string' ? init.body : undefined;
        if (body !== undefined && (JSON.parse(body) as { method?: unknown }).method === 'tools/call') {
          const headers: Record<string, string> = {};
          new Headers(init?.headers).forEach((value, key) => {
            if (key !== 'content-length') headers[key] = value;
          });
          captured = { headers, body: JSON.stringify({ ...JSON.parse(body), id: 1 }) };
        }
        return fetch(input, init);
      },
    }),
  );
  try {
    const result = await client.callTool({ name, arguments: { text: TEXT } });
    const text = (result as { content?: Array<{ text?: string }> }).content?.[0]?.text;
    expect(`${url} tools/call from the 2026-07-28 client`, !result.isError && text === TEXT, JSON.stringify(result));
  } finally {
    await client.close();
  }
  expect(`${url} tools/call from the 2026-07-28 client`, captured !== undefined, 'no tools/call request was sent');
  return captured!;
}

/**
 * A 2025-11-25 session as a real client opens one: `initialize`, then `notifications/initialized`
 * with the `Mcp-Session-Id` the answer gave (none from a stateless server). The headers its
 * requests carry from then on.
 */
async function openSession(url: string, headers: Record<string, string>): Promise<Record<string, string>> {
  const u = new URL(url);
  const init = await call(u.origin, 'POST', u.pathname, { headers, body: INITIALIZE });
  expect(`${url} initialize`, init.status === 200, `${init.status} ${init.text}`);
  const sid = init.headers['mcp-session-id'];
  const session: Record<string, string> = typeof sid === 'string' && sid !== '' ? { 'mcp-session-id': sid } : {};
  const done = await call(u.origin, 'POST', u.pathname, {
    headers: { ...headers, ...session },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  expect(`${url} notifications/initialized`, done.status === 202 || done.status === 200, `${done.status} ${done.text}`);
  return session;
}

/** Requests per call, by method, as printed: "tools/call 1.000, tools/list 0.002". */
const perCall = (counted: Record<string, number>, calls: number) =>
  Object.entries(counted)
    .sort(([, a], [, b]) => b - a)
    .map(([method, n]) => `${method} ${(n / calls).toFixed(3)}`)
    .join(', ') || 'nothing';
const upstreamPerCall = (m: Looped) => Object.values(m.counted).reduce((a, b) => a + b, 0) / m.requests;

async function toolCalls(bench: McpBench, upstream: Child<{ listening: string; control: string }>): Promise<Part2> {
  const upstreamState = async () =>
    (await call(upstream.boot.control, 'GET', '/count')).body as { count: number; methods: Record<string, number> };
  const count = async () => (await upstreamState()).count;
  const counters = async () => (await upstreamState()).methods;
  const proxiedName = `${UPSTREAM_NAME}__${TOOL}`;
  const svcMcp = `${bench.server.url}/mcp`;
  const directHeaders = { ...MCP_HEADERS, ...bearer(SECRET) };
  const proxiedHeaders = { ...MCP_HEADERS, ...bearer(bench.key) };
  const target = (name: string, url: string, headers: Record<string, string>, proxied: boolean): LoopTarget => ({
    name,
    url,
    headers,
    lanes: [],
    pids: proxied ? [bench.server.child.pid!, upstream.child.pid!] : [upstream.child.pid!],
    counters,
  });
  const legacy: Way = {
    label: '2025-11-25, no session',
    direct: target('upstream MCP, direct, 2025-11-25', upstream.url, directHeaders, false),
    proxied: target(`svc /mcp, proxied (${proxiedName}), 2025-11-25`, svcMcp, proxiedHeaders, true),
  };
  const session: Way = {
    label: '2025-11-25, in a session',
    direct: target('upstream MCP, direct, 2025-11-25 session', upstream.url, directHeaders, false),
    proxied: target(`svc /mcp, proxied (${proxiedName}), 2025-11-25 session`, svcMcp, proxiedHeaders, true),
  };
  const modernDirectCall = await modernToolCall(upstream.url, SECRET, TOOL);
  const modernProxiedCall = await modernToolCall(svcMcp, bench.key, proxiedName);
  console.log(
    `the 2026-07-28 tools/call, as @modelcontextprotocol/client sends it: headers ${Object.keys(modernProxiedCall.headers).sort().join(', ')}; body ${modernProxiedCall.body}`,
  );
  const modern: Way = {
    label: MODERN,
    direct: target(`upstream MCP, direct, ${MODERN}`, upstream.url, modernDirectCall.headers, false),
    proxied: target(`svc /mcp, proxied (${proxiedName}), ${MODERN}`, svcMcp, modernProxiedCall.headers, true),
  };
  const ways = [legacy, session, modern];
  const bodies = new Map([
    [legacy.direct, toolCall(TOOL)],
    [legacy.proxied, toolCall(proxiedName)],
    [session.direct, toolCall(TOOL)],
    [session.proxied, toolCall(proxiedName)],
    [modern.direct, modernDirectCall.body],
    [modern.proxied, modernProxiedCall.body],
  ]);
  // Each connection of a session target has a session of its own, opened before the run.
  const sessionHeaders = new Map<LoopTarget, Array<Record<string, string>>>();
  for (const t of [session.direct, session.proxied]) {
    const opened: Array<Record<string, string>> = [];
    for (let i = 0; i < SHAPE.connections; i += 1) opened.push(await openSession(t.url, t.headers));
    sessionHeaders.set(t, opened);
    console.log(
      `${t.name}: ${opened.length} sessions opened (initialize, notifications/initialized), ${opened[0]!['mcp-session-id'] ? 'each with its Mcp-Session-Id' : 'no Mcp-Session-Id answered (a stateless server)'}`,
    );
  }
  const headersOf = (t: LoopTarget, lane = 0) => ({ ...t.headers, ...(sessionHeaders.get(t)?.[lane] ?? {}) });

  // At 2025-11-25 without initialize first: the stateless transports should answer a lone tools/call.
  let initialize = false;
  for (const [t, body] of bodies) {
    const answer = await post(t.url, headersOf(t), body);
    const why = judgeToolCall(answer);
    if (why === undefined) {
      console.log(
        `${t.name}: a lone tools/call answered 200 ${(answer as { contentType: string }).contentType}, ${Buffer.byteLength((answer as { text: string }).text)} bytes`,
      );
      continue;
    }
    const stateless = t === legacy.direct || t === legacy.proxied;
    expect(`${t.name} tools/call`, stateless, `${why}: ${JSON.stringify(answer)}`);
    const init = await post(t.url, t.headers, INITIALIZE);
    const again = await post(t.url, t.headers, body);
    expect(
      `${t.name} tools/call`,
      !('error' in init) && init.status === 200 && judgeToolCall(again) === undefined,
      `${why}; with initialize first: ${JSON.stringify(again)}`,
    );
    console.log(
      `${t.name}: a lone tools/call was refused (${why}); every 2025-11-25 call without a session is sent after an initialize on its connection, timed as one`,
    );
    initialize = true;
  }
  const prelude = (t: LoopTarget) => initialize && (t === legacy.direct || t === legacy.proxied);
  // What one more call (the pools and sessions warm) asks of the upstream, by method.
  for (const [t, body] of bodies) {
    const before = await counters();
    if (prelude(t)) await post(t.url, t.headers, INITIALIZE);
    expect(`${t.name} tools/call`, judgeToolCall(await post(t.url, headersOf(t), body)) === undefined, 'refused');
    const after = await counters();
    const asked = Object.entries(after)
      .map(([method, n]) => [method, n - (before[method] ?? 0)] as const)
      .filter(([, n]) => n > 0)
      .map(([method, n]) => `${method} ${n}`);
    console.log(`${t.name}: one call, the upstream received ${asked.join(', ') || 'nothing'}`);
  }
  const lanesOf = (t: LoopTarget, n: number): LoopTarget => ({
    ...t,
    lanes: Array.from({ length: n }, (_, i) => {
      const lane = fixedLane(bodies.get(t)!, judgeToolCall);
      const extra = sessionHeaders.get(t)?.[i];
      return extra ? { ...lane, headersFor: () => extra } : lane;
    }),
    ...(prelude(t) ? { prelude: INITIALIZE } : {}),
  });
  const order = ways.flatMap((w) => [w.direct, w.proxied]);
  const before = await count();
  const one = await closedLoop(
    order.map((t) => lanesOf(t, 1)),
    { ...TOOL_SHAPE, connections: 1 },
  );
  const many = await closedLoop(
    order.map((t) => lanesOf(t, TOOL_SHAPE.connections)),
    TOOL_SHAPE,
  );
  const forwarded = (await count()) - before;
  return {
    ways: ways.map((way, i) => ({
      way,
      one: { direct: one[2 * i]!, proxied: one[2 * i + 1]! },
      many: { direct: many[2 * i]!, proxied: many[2 * i + 1]! },
    })),
    initialize,
    forwarded,
    answered: [...one, ...many].reduce((n, m) => n + m.answeredAll, 0),
  };
}

const cpuCell = (m: Looped, k: number) => micros(cpuMicros(m.cpuTicks[k]!, m.requests));

function printToolCalls(two: Part2): Goal[] {
  const { connections } = SHAPE;
  const rows = (pick: (m: Measured2) => { direct: Looped; proxied: Looped }) =>
    two.ways.flatMap((w) => {
      const { direct, proxied } = pick(w);
      return [direct, proxied].map((m) => [
        m.name,
        m.rps.toFixed(0),
        times(m.rps, direct.rps),
        ms(m.p50),
        times(m.p50, direct.p50),
        ms(m.p99),
        m === proxied ? plusMs(m.p99 - direct.p99) : '-',
        String(m.requests),
        m === proxied ? cpuCell(m, 0) : '-',
        cpuCell(m, m === proxied ? 1 : 0),
        upstreamPerCall(m).toFixed(3),
        failed(m.bad),
      ]);
    });
  const head = (n: number) => [
    `tools/call, ${n} connection${n === 1 ? '' : 's'}`,
    'req/s',
    'vs direct',
    'p50 ms',
    'p50 vs direct',
    'p99 ms',
    'added p99 ms',
    'requests',
    'svc CPU µs/call',
    'upstream CPU µs/call',
    'upstream req/call',
    'failed',
  ];
  console.log(
    table(
      head(1),
      rows((m) => m.one),
    ),
  );
  console.log('');
  console.log(
    table(
      head(connections),
      rows((m) => m.many),
    ),
  );
  console.log('');
  for (const { way, many } of two.ways)
    console.log(
      `${way.label}: the upstream received per proxied call ${perCall(many.proxied.counted, many.proxied.requests)}; per direct call ${perCall(many.direct.counted, many.direct.requests)} (${connections} connections)`,
    );
  console.log(
    `upstream tool calls run: ${two.forwarded} (direct and proxied calls answered, warm-ups included: ${two.answered})${two.initialize ? '; each call without a session after an initialize' : ''}`,
  );

  const goals: Goal[] = [];
  for (const { way, one, many } of two.ways) {
    const figures = {
      svc: `p50 ${ms(one.proxied.p50)} / p99 ${ms(one.proxied.p99)} ms`,
      baseline: `p50 ${ms(one.direct.p50)} / p99 ${ms(one.direct.p99)} ms (direct)`,
      ratio: one.proxied.p50 / one.direct.p50,
      cpuMicros: cpuMicros(one.proxied.cpuTicks[0]!, one.proxied.requests),
    };
    const added = one.proxied.p99 - one.direct.p99;
    const requests = upstreamPerCall(many.proxied);
    const calls = (many.proxied.counted['tools/call'] ?? 0) / many.proxied.requests;
    goals.push(
      {
        benchmark: `proxied tools/call p50, ${way.label}, 1 conn`,
        measured: `${(one.proxied.p50 / one.direct.p50).toFixed(2)}x direct (${ms(one.proxied.p50)} vs ${ms(one.direct.p50)} ms)`,
        goal: `<= ${GOALS.p50Ratio.toFixed(2)}x`,
        met: one.proxied.p50 / one.direct.p50 <= GOALS.p50Ratio,
        ...figures,
      },
      {
        benchmark: `proxied tools/call p99, ${way.label}, 1 conn`,
        measured: `${plusMs(added)} ms over direct (${ms(one.proxied.p99)} vs ${ms(one.direct.p99)} ms)`,
        goal: `<= +${GOALS.p99AddedMs} ms`,
        met: added <= GOALS.p99AddedMs,
        ...figures,
      },
      {
        benchmark: `upstream requests per proxied call, ${way.label}`,
        measured: `${requests.toFixed(3)} (${perCall(many.proxied.counted, many.proxied.requests)})`,
        goal: `${GOALS.upstreamRequests} (tools/call; the rest < ${GOALS.upstreamOther} per call)`,
        met: Math.abs(calls - GOALS.upstreamRequests) < GOALS.upstreamOther && requests - calls < GOALS.upstreamOther,
        ...figures,
      },
    );
  }
  const [stateless] = two.ways as [Measured2];
  const ratio = stateless.many.proxied.rps / stateless.many.direct.rps;
  const proxiedCpu = cpuMicros(stateless.many.proxied.cpuTicks[0]!, stateless.many.proxied.requests);
  const throughput = {
    svc: `${stateless.many.proxied.rps.toFixed(0)} req/s`,
    baseline: `${stateless.many.direct.rps.toFixed(0)} req/s (direct)`,
    ratio,
    cpuMicros: proxiedCpu,
  };
  goals.push(
    {
      benchmark: `proxied tools/call, 2025-11-25, ${connections} conn`,
      measured: `${ratio.toFixed(2)} of direct req/s (${throughput.svc} vs ${throughput.baseline})`,
      goal: `>= ${GOALS.proxied.toFixed(2)}`,
      met: ratio >= GOALS.proxied,
      ...throughput,
    },
    {
      benchmark: `proxied tools/call CPU, 2025-11-25, ${connections} conn`,
      measured: `${proxiedCpu.toFixed(0)} µs of svc CPU per call`,
      goal: `<= ${GOALS.proxiedCpuMicros} µs`,
      met: proxiedCpu <= GOALS.proxiedCpuMicros,
      ...throughput,
    },
  );
  for (const { way, many } of two.ways.slice(1))
    goals.push({
      benchmark: `proxied tools/call CPU, ${way.label}, ${connections} conn`,
      measured: `${cpuCell(many.proxied, 0)} µs of svc CPU per call; ${(many.proxied.rps / many.direct.rps).toFixed(2)} of direct req/s`,
      goal: '',
      met: true,
      svc: `${many.proxied.rps.toFixed(0)} req/s`,
      baseline: `${many.direct.rps.toFixed(0)} req/s (direct)`,
      ratio: many.proxied.rps / many.direct.rps,
      cpuMicros: cpuMicros(many.proxied.cpuTicks[0]!, many.proxied.requests),
    });
  return goals;
}

async function main(): Promise<number> {
  const { connections, warmupSeconds, roundSeconds, rounds } = SHAPE;
  console.log(
    `MCP benchmark: svc serve (dist/, first start, info logs), the fixture upstream MCP server and a bare hapi server, each its own process, Node ${process.version}`,
  );
  console.log(
    `closed loops: ${connections} connections (tools/call: 1, then ${connections}), each sending its next request once its answer is read and judged; ${warmupSeconds} s warm-up + ${rounds} x ${roundSeconds} s alternating rounds (tools/call: ${TOOL_SHAPE.rounds} x ${TOOL_SHAPE.roundSeconds} s); latency sub-ms (performance.now())`,
  );
  console.log(
    `server CPU: utime + stime of each process (/proc, ${CLK_TCK} ticks/s) over the measured rounds / answers`,
  );
  console.log(`machine: ${availableParallelism()} CPUs, load average ${load()} at start\n`);
  if (!grantsToo) console.log('BENCH_MCP_ONLY=tools: the refresh grants are not measured\n');

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

    const one = grantsToo ? await refreshGrants(bench, bare) : undefined;
    console.log(`load average ${load()} before the tool calls`);
    const two = await toolCalls(bench, upstream);
    console.log(`load average ${load()} at the end\n`);

    const goals: Goal[] = [];
    if (one) {
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
          [one.token, one.pairs, one.bare].map((m) => [
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
        `two refreshes at once: ${(one.pairs.rps / 2).toFixed(0)} rotations/s, each step's two grants answered 200 with the same new pair (${one.pairs.rps.toFixed(0)} grants/s; p50/p99 of the step, until both answered; CPU per grant); one at a time: ${one.token.rps.toFixed(0)} grants/s, each a rotation`,
      );
      console.log(
        `after the grants: ${2 * connections - one.deadTokens} of ${2 * connections} chains' last access tokens work at /mcp; ${one.ended} connections ended\n`,
      );
      const grants = {
        svc: `${one.token.rps.toFixed(0)} grants/s`,
        baseline: `${one.bare.rps.toFixed(0)} req/s (bare)`,
        ratio: one.token.rps / one.bare.rps,
        cpuMicros: cpuMicros(one.token.cpuTicks[0]!, one.token.requests),
      };
      goals.push(
        {
          benchmark: `refresh grants, ${connections} chains`,
          measured: `${one.token.rps.toFixed(0)} grants/s (bare ${one.bare.rps.toFixed(0)} req/s)`,
          goal: `>= ${GOALS.grantsPerSecond} grants/s`,
          met: one.token.rps >= GOALS.grantsPerSecond,
          ...grants,
        },
        {
          benchmark: `refresh grants p99, ${connections} chains`,
          measured: `p99 ${ms(one.token.p99)} ms`,
          goal: `<= ${GOALS.grantsP99} ms`,
          met: one.token.p99 <= GOALS.grantsP99,
          ...grants,
        },
      );
    }
    goals.push(...printToolCalls(two));
    console.log(
      `svc serve error-level log lines: ${svcLog.errors}${svcLog.firstErrors.map((l) => `\n  ${l}`).join('')}\n`,
    );
    console.log(goalsTable(goals));

    const tools = two.ways.flatMap((w) => [w.one.direct, w.one.proxied, w.many.direct, w.many.proxied]);
    const all = [...(one ? [one.token, one.pairs, one.bare] : []), ...tools];
    const failures = all.reduce((n, m) => n + Object.values(m.bad).reduce((a, b) => a + b, 0), 0);
    const problems: string[] = [];
    if (failures > 0) problems.push(`${failures} requests failed (see "failed" above)`);
    if (one && one.token.stopped > 0) problems.push(`${one.token.stopped} refresh chains stopped after a failed grant`);
    if (one && one.pairs.stopped > 0)
      problems.push(`${one.pairs.stopped} twin-refresh chains stopped after a failed pair of grants`);
    if (one && one.deadTokens > 0) problems.push(`${one.deadTokens} chains' last access tokens do not work at /mcp`);
    if (one && one.ended !== 0)
      problems.push(
        one.ended < 0 ? 'the connections list could not be read' : `${one.ended} connections ended during the grants`,
      );
    if (failures === 0 && two.forwarded !== two.answered)
      problems.push(`the upstream ran ${two.forwarded} tool calls for ${two.answered} answered`);
    const missed = goals.filter((g) => !g.met);
    if (missed.length > 0)
      console.log(`\nbelow goal (reported, not a failure): ${missed.map((g) => g.benchmark).join(', ')}`);
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
