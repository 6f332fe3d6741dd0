import fc from 'fast-check';
import { performance } from 'node:perf_hooks';
import { connect } from '../bench/mcp-fixture.js';
import { createAgent } from '../helpers/gate.js';
import { call, csrf, ownerSession } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { removeDir } from '../helpers/process.js';
import { CATALOGUE, gatewayConfig, VENDOR_ENV } from '../gateway/support.js';
import { startMockVendor } from '../helpers/mock-vendor.js';
import {
  aimedBody,
  body,
  extraHeaders,
  OTHER_METHODS,
  pathValue,
  query,
  type Body,
  type Context,
  type Schema,
} from './inputs.js';
import { KNOWN, type Known } from './known.js';
import { LoopWatch, send, type WireAnswer, type WireRequest } from './wire.js';

/**
 * The fuzz campaign (npm run fuzz, and a short slice in npm test): every route of the server's
 * own route table, with every method it takes and some it does not, is sent requests that
 * fast-check makes from a seed: path parameters, query strings, bodies from the route's OpenAPI
 * schema and anything else, odd content types and encodings, and every kind of credential. The
 * server runs in this process, so that the time its event loop is held can be measured.
 *
 * A finding is any answer a user should never see: a 5xx other than the documented 503s
 * (`store_unavailable`, `overloaded`) in the catalogue's shape; a stack trace or a source path in
 * an error; an error of /v1 or /api without the catalogue's `error.type` (OAuth's RFC 6749
 * `{ error }` and MCP's JSON-RPC errors in their own shapes); no answer at all; or the event loop
 * held for more than 100 ms of CPU while one request was in flight.
 */

export const STALL_MS = 100;
const ANSWER_TIMEOUT_MS = 20_000;

export interface Route {
  method: string;
  path: string;
  /** Every method the path takes. */
  methods: string[];
  /** The route's auth strategies (empty: none). */
  auth: string[];
  schema?: Schema;
  queryNames: string[];
}

export interface Finding {
  kind: 'server_error' | 'stack_trace' | 'error_shape' | 'no_answer' | 'stall';
  detail: string;
  route: Route;
  request: WireRequest;
  credential: string;
  bodyKind: string;
  status?: number;
  /** The answer's first bytes. */
  answer?: string;
}

export interface Options {
  seed: number;
  /** Requests per route and method. */
  runs: number;
  /** Only routes whose `METHOD /path` contains this. */
  route?: string;
  /** A counterexample's path from an earlier report, with `route`: replays it. */
  path?: string;
  log?: (line: string) => void;
}

export interface Result {
  routes: number;
  /** How each route answered (status: count): how far the requests got. */
  statuses: Record<string, Record<number, number>>;
  requests: number;
  ms: number;
  findings: (Finding & { reproduce: string })[];
  known: { finding: Finding; known: Known }[];
  /** Known entries no request matched in this run. */
  unseen: Known[];
}

interface Credential {
  name: string;
  /** The strategies it is meant for. */
  fits: string[];
  headers(): [string, string][];
}

interface Fixture {
  server: ServedInProcess;
  close(): Promise<void>;
  credentials: Credential[];
  /** Real values for path parameters, so that requests reach past "not found". */
  real: Record<string, string>;
  /** Real values for body fields of these names. */
  hints: Record<string, string[]>;
  refreshSession(): Promise<void>;
}

const UNLIMITED = 100_000_000;

async function start(): Promise<Fixture> {
  // The gateway's catalogue points at a loopback stand-in for two vendors, so that model traffic
  // goes past "unknown model" to the tokenizer, the budgets and the vendor call.
  const vendor = await startMockVendor();
  const server = await serveInProcess({
    config: gatewayConfig(vendor),
    env: VENDOR_ENV,
    overrides: {
      'rateLimits.publicPerMinute': UNLIMITED,
      'rateLimits.signInPerMinute': UNLIMITED,
      'rateLimits.gatePerMinute': UNLIMITED,
    },
  });
  const base = server.url;
  const agent = await createAgent(server);
  const wid = agent.wid;
  const headers = { ...csrf, cookie: agent.cookie };
  const target = await call(base, 'POST', `/api/w/${wid}/agents`, { headers, json: { name: 'fuzz-target' } });
  if (target.status !== 201) throw new Error(`second agent: ${target.status} ${target.text}`);
  const keys = server.app.services.keys;
  const admin = (await keys.mint(wid, { scope: 'admin', defaultTaskClass: 'general' }, 'fuzz')).key;
  const inference = (await keys.mint(wid, { scope: 'inference', defaultTaskClass: 'general' }, 'fuzz')).key;
  const minted = await call(base, 'POST', `/api/w/${wid}/service-tokens`, {
    headers,
    json: {
      name: 'fuzz',
      scopes: ['agents:read', 'agents:write', 'agents:freeze', 'approvals:read', 'evidence:read'],
      expiresInDays: 30,
    },
  });
  if (minted.status !== 201) throw new Error(`service token: ${minted.status} ${minted.text}`);
  const oauth = await connect({ server: { url: base }, cookie: agent.cookie, agentId: agent.agentId }, 'fuzz');

  let cookie = agent.cookie;
  const bearer = (value: string): [string, string][] => [['authorization', `Bearer ${value}`]];
  const now = () => Math.floor(Date.now() / 1000);
  const credentials: Credential[] = [
    { name: 'none', fits: [], headers: () => [] },
    { name: 'garbage-bearer', fits: [], headers: () => bearer(`ask_${'x'.repeat(40)}`) },
    {
      name: 'malformed-authorization',
      fits: [],
      headers: () => [['authorization', `Bearer  aat_%ff${'x'.repeat(5_000)}`]],
    },
    { name: 'basic', fits: [], headers: () => [['authorization', 'Basic Zm9vOmJhcg==']] },
    { name: 'admin-key', fits: ['workspace-key'], headers: () => bearer(admin) },
    { name: 'admin-key-x-api-key', fits: ['workspace-key'], headers: () => [['x-api-key', admin]] },
    { name: 'inference-key', fits: ['workspace-key'], headers: () => bearer(inference) },
    { name: 'agent-key', fits: ['agent-key', 'workspace-key'], headers: () => bearer(agent.key) },
    { name: 'oauth-access-token', fits: ['agent-key'], headers: () => bearer(oauth.access) },
    { name: 'service-token', fits: ['service-token'], headers: () => bearer(minted.body.token as string) },
    {
      name: 'session',
      fits: ['session'],
      headers: () => [
        ['cookie', cookie],
        ['x-svc-csrf', '1'],
      ],
    },
    { name: 'session-without-csrf', fits: ['session'], headers: () => [['cookie', cookie]] },
    { name: 'garbage-cookie', fits: [], headers: () => [['cookie', `${cookie.split('=')[0]}=Fe26.2**garbage`]] },
    {
      name: 'bad-signature',
      fits: ['signature'],
      headers: () => [
        ['svc-signature', `t=${now()},v1=${'0'.repeat(64)}`],
        ['stripe-signature', `t=${now()},v1=${'0'.repeat(64)}`],
        ['x-hub-signature-256', `sha256=${'0'.repeat(64)}`],
        ['x-github-event', 'ping'],
        ['x-slack-signature', `v0=${'0'.repeat(64)}`],
        ['x-slack-request-timestamp', String(now())],
      ],
    },
  ];
  return {
    server,
    async close() {
      await server.stop();
      await vendor.close();
      await removeDir(server.dataDir);
    },
    credentials,
    real: { wid, aid: target.body.id as string },
    hints: { model: CATALOGUE.map((m) => m.id), agentId: [agent.agentId], agentIds: [agent.agentId] },
    async refreshSession() {
      const me = await call(base, 'GET', '/api/me', { headers: { cookie } });
      if (me.status !== 200) cookie = await ownerSession(server);
    },
  };
}

/** Every route of the server's table, with its schema and query parameters from /openapi.json. */
async function routes(fixture: Fixture): Promise<Route[]> {
  const doc = (await call(fixture.server.url, 'GET', '/openapi.json')).body as {
    paths: Record<
      string,
      Record<
        string,
        { requestBody?: { content?: Record<string, { schema?: Schema }> }; parameters?: { name: string; in: string }[] }
      >
    >;
  };
  const table = fixture.server.http.server.table();
  const methodsOf = new Map<string, string[]>();
  for (const r of table) methodsOf.set(r.path, [...(methodsOf.get(r.path) ?? []), r.method.toUpperCase()]);
  return table
    .map((r) => {
      const op = doc.paths[r.path]?.[r.method];
      const auth = r.settings.auth as { strategies?: string[] } | false | undefined;
      return {
        method: r.method === '*' ? 'GET' : r.method.toUpperCase(),
        path: r.path,
        methods: methodsOf.get(r.path) ?? [],
        auth: (auth ? (auth.strategies ?? []) : []).map((s) => (s.startsWith('signature') ? 'signature' : s)),
        schema: op?.requestBody?.content?.['application/json']?.schema,
        queryNames: (op?.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
      } as Route;
    })
    .sort((a, b) => `${a.path} ${a.method}`.localeCompare(`${b.path} ${b.method}`));
}

interface Sent {
  request: WireRequest;
  credential: string;
  bodyKind: string;
}

function requests(route: Route, fixture: Fixture, ctx: Context): fc.Arbitrary<Sent> {
  const params = [...route.path.matchAll(/\{(\w+)[?*\d]*\}/g)].map((m) => m[1]!);
  const own = fixture.credentials.filter((c) => c.fits.some((f) => route.auth.includes(f)));
  const takesBody = !['GET', 'DELETE', 'HEAD'].includes(route.method);
  // A third of the requests are aimed: the route's method and credential, no query, a body its
  // schema accepts; so that they reach the route's own code. The rest are hostile in every part.
  const aimed = fc.record({
    method: fc.constant(route.method),
    params: fc.tuple(...params.map((p) => (fixture.real[p] ? fc.constant(fixture.real[p]) : pathValue(undefined)))),
    query: fc.constant(''),
    credential: fc.constantFrom(...(own.length > 0 ? own : fixture.credentials.slice(0, 1))),
    body: takesBody ? aimedBody(route.schema, ctx) : fc.constant(undefined),
    extra: fc.constant<[string, string][]>([]),
  });
  const hostile = fc.record({
    method: fc.oneof(
      { weight: 8, arbitrary: fc.constant(route.method) },
      { weight: 1, arbitrary: fc.constantFrom(...OTHER_METHODS) },
    ),
    params: fc.tuple(...params.map((p) => pathValue(fixture.real[p]))),
    query: query(route.queryNames),
    credential: fc.oneof(...(own.length > 0 ? [{ weight: 3, arbitrary: fc.constantFrom(...own) }] : []), {
      weight: 2,
      arbitrary: fc.constantFrom(...fixture.credentials),
    }),
    body: fc.option(body(route.schema, ctx), { freq: takesBody ? 8 : 1, nil: undefined }),
    extra: extraHeaders,
  });
  return fc
    .oneof({ weight: 1, arbitrary: aimed }, { weight: 2, arbitrary: hostile })
    .map(({ method, params: values, query: q, credential, body: b, extra }) => {
      let i = 0;
      const target = route.path.replace(/\{(\w+)[?*\d]*\}/g, () => values[i++] ?? '') + q;
      return {
        request: wire(method, target, credential, b, extra),
        credential: credential.name,
        bodyKind: b?.kind ?? 'none',
      };
    });
}

function wire(
  method: string,
  target: string,
  credential: Credential,
  b: Body | undefined,
  extra: [string, string][],
): WireRequest {
  const headers: [string, string][] = [...credential.headers(), ...extra];
  if (b?.contentType) headers.push(['content-type', b.contentType]);
  if (b?.contentEncoding) headers.push(['content-encoding', b.contentEncoding]);
  return { method, target, headers, ...(b ? { body: b.bytes } : {}) };
}

const STACK = /\n\s+at [^\s]+ \(|node:internal|\/src\/[\w./-]+\.[jt]s|\.[jt]s:\d+:\d+|\/node_modules\//;
const DOCUMENTED_503 = new Set(['store_unavailable', 'overloaded']);

/** What is wrong with this answer, if anything. */
export function judge(
  route: Route,
  request: WireRequest,
  answer: WireAnswer,
): Pick<Finding, 'kind' | 'detail'> | undefined {
  const text = answer.body.toString('utf8');
  const isJson = /json/.test(answer.headers['content-type'] ?? '');
  let parsed: { error?: unknown; jsonrpc?: unknown } | undefined;
  try {
    parsed = isJson && text ? (JSON.parse(text) as typeof parsed) : undefined;
  } catch {
    parsed = undefined;
  }
  const error = parsed?.error as { type?: unknown; message?: unknown; requestId?: unknown; code?: unknown } | undefined;
  const catalogued =
    typeof error?.type === 'string' && typeof error.message === 'string' && typeof error.requestId === 'string';
  if (answer.status >= 500 && !(answer.status === 503 && catalogued && DOCUMENTED_503.has(error!.type as string)))
    return {
      kind: 'server_error',
      detail: `${answer.status} ${typeof error?.type === 'string' ? error.type : ''}`.trim(),
    };
  if (answer.status < 400) return undefined;
  if (STACK.test(text)) return { kind: 'stack_trace', detail: `${answer.status}: ${STACK.exec(text)![0]}` };
  if (request.method === 'HEAD' || answer.streamed) return undefined;
  const path = request.target.split('?')[0]!;
  const api = /^\/(v1|api)(\/|$)/.test(path);
  if (!isJson)
    return api
      ? {
          kind: 'error_shape',
          detail: `${answer.status} answered ${answer.headers['content-type'] ?? 'no content type'}`,
        }
      : undefined;
  if (catalogued) return undefined;
  if (/^\/oauth\//.test(route.path) && typeof error === 'string') return undefined;
  if (route.path === '/mcp' && parsed?.jsonrpc === '2.0' && typeof error?.code === 'number') return undefined;
  return { kind: 'error_shape', detail: `${answer.status} without error.type: ${text.slice(0, 200)}` };
}

const show = (request: WireRequest): string => {
  const b = request.body;
  const bodyText = b
    ? b
        .subarray(0, 300)
        .toString('utf8')
        .replace(/[^\x20-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16)}`)
    : '';
  return [
    `${request.method} ${request.target.length > 300 ? `${request.target.slice(0, 300)}… (${request.target.length} chars)` : request.target}`,
    ...request.headers.map(([n, v]) => `  ${n}: ${v.length > 120 ? `${v.slice(0, 120)}… (${v.length} chars)` : v}`),
    ...(b ? [`  body (${b.length} bytes): ${bodyText}${b.length > 300 ? '…' : ''}`] : []),
  ].join('\n');
};

export function describe(f: Finding): string {
  return `${f.kind} on ${f.route.method} ${f.route.path} (${f.detail}; credential ${f.credential}, body ${f.bodyKind})\n${show(f.request)}${f.answer ? `\n  answered: ${f.answer}` : ''}`;
}

/** A route's own seed: the run's seed and its name, so that one route replays alone with the same inputs. */
const seedOf = (seed: number, name: string) => {
  let h = seed | 0;
  for (const c of name) h = (Math.imul(h, 31) + c.charCodeAt(0)) | 0;
  return h;
};

export async function runCampaign(options: Options): Promise<Result> {
  const log = options.log ?? (() => {});
  const began = performance.now();
  const fixture = await start();
  const watch = new LoopWatch();
  const port = Number(new URL(fixture.server.url).port);
  const result: Result = { routes: 0, statuses: {}, requests: 0, ms: 0, findings: [], known: [], unseen: [] };
  const seen = new Set<string>();
  try {
    const doc = (await call(fixture.server.url, 'GET', '/openapi.json')).body as {
      components?: { schemas?: Context['components'] };
    };
    const ctx: Context = { components: doc.components?.schemas ?? {}, hints: fixture.hints };
    const all = (await routes(fixture)).filter(
      (r) => !options.route || `${r.method} ${r.path}`.includes(options.route),
    );
    watch.start();
    for (const route of all) {
      const name = `${route.method} ${route.path}`;
      result.routes++;
      let found: Finding | undefined;
      const details = await fc.check(
        fc.asyncProperty(requests(route, fixture, ctx), async (sent) => {
          result.requests++;
          watch.begin();
          const answer = await send(port, sent.request, ANSWER_TIMEOUT_MS);
          let heldMs = watch.end();
          // A stall counts when it comes back: the same request is sent again, up to twice, and the
          // shortest hold is kept (a collection of garbage left by earlier requests does not return).
          for (let again = 0; again < 2 && heldMs > STALL_MS; again++) {
            watch.begin();
            await send(port, sent.request, ANSWER_TIMEOUT_MS);
            heldMs = Math.min(heldMs, watch.end());
          }
          const base = { route, request: sent.request, credential: sent.credential, bodyKind: sent.bodyKind };
          const problems: Finding[] = [];
          if (!answer) problems.push({ ...base, kind: 'no_answer', detail: `nothing in ${ANSWER_TIMEOUT_MS} ms` });
          else {
            const wrong = judge(route, sent.request, answer);
            const snippet = answer.body.subarray(0, 300).toString('utf8');
            const counts = (result.statuses[name] ??= {});
            counts[answer.status] = (counts[answer.status] ?? 0) + 1;
            if (wrong)
              problems.push({ ...base, ...wrong, status: answer.status, answer: `${answer.status} ${snippet}` });
            if (sent.request.method === 'DELETE' && route.path === '/api/session' && answer.status < 300)
              await fixture.refreshSession();
          }
          if (heldMs > STALL_MS)
            problems.push({ ...base, kind: 'stall', detail: `event loop held ${Math.round(heldMs)} ms of CPU` });
          for (const problem of problems) {
            const known = KNOWN.find((k) => k.matches(problem));
            if (known) {
              seen.add(known.id);
              result.known.push({ finding: problem, known });
              log(`known (${known.id}): ${problem.kind} on ${name}`);
            } else found ??= problem;
          }
          return problems.every((p) => KNOWN.some((k) => k.matches(p)));
        }),
        {
          seed: seedOf(options.seed, name),
          numRuns: options.runs,
          endOnFailure: true,
          ...(options.path && options.route ? { path: options.path } : {}),
        },
      );
      await fixture.refreshSession();
      if (details.failed && found) {
        const reproduce = `FUZZ_SEED=${options.seed} FUZZ_RUNS=${options.runs} FUZZ_ROUTE='${name}' FUZZ_PATH='${details.counterexamplePath ?? ''}' npm run fuzz`;
        result.findings.push({ ...found, reproduce });
        log(`FINDING ${describe(found)}\n  reproduce: ${reproduce}`);
      } else if (details.failed && details.errorInstance) throw details.errorInstance;
      const answered = Object.entries(result.statuses[name] ?? {})
        .map(([status, count]) => `${status}x${count}`)
        .join(' ');
      log(`${name}: ${details.numRuns} requests (${answered})${details.failed ? ', stopped at a finding' : ''}`);
    }
  } finally {
    watch.stop();
    await fixture.close();
  }
  result.unseen = KNOWN.filter((k) => !seen.has(k.id));
  result.ms = performance.now() - began;
  return result;
}

/** The run as text: each known entry seen (how often, and one example), those not seen, the totals, then every finding with its reproduction. */
export function report(result: Result): string {
  const lines: string[] = [];
  for (const entry of KNOWN) {
    const hits = result.known.filter((k) => k.known === entry);
    if (hits.length > 0)
      lines.push(
        `known: ${entry.id} (${hits.length}x): ${entry.what}\n  e.g. ${describe(hits[0]!.finding).replaceAll('\n', '\n  ')}`,
      );
    else lines.push(`known entry not seen in this run: ${entry.id}`);
  }
  lines.push(
    `fuzz: ${result.routes} routes, ${result.requests} requests in ${Math.round(result.ms / 1000)} s; ` +
      `${result.findings.length} findings, ${result.known.length} known (stall limit ${STALL_MS} ms)`,
  );
  for (const f of result.findings) lines.push(`\n${describe(f)}\n  reproduce: ${f.reproduce}`);
  return lines.join('\n');
}
