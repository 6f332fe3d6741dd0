/**
 * The soak's mix of requests: what each kind sends and what a correct answer to it is.
 * Invariants:
 * - The order of kinds is fixed (smooth weighted round-robin over the weights), and every choice
 *   inside a kind (which agent, which ledger page) comes from a seeded generator: two soaks send
 *   the same sequence of requests; only the server's answers (ids, receipts) differ.
 * - A kind that needs something an earlier answer gave (settle: an allowed action; verify: its
 *   receipt; approve: a waiting approval) sends an allowed authorize instead while it has none.
 *   Each allowed action is settled once and each approval decided once; receipts are verified
 *   first fresh, then as replays of recent ones.
 * - An answer is judged by its body, not only its status: an `allow` that came back `deny`, a
 *   stream cut before `[DONE]`, a tool call answered `isError`: each is an unexpected answer.
 */
import { PAYMENT, UPSTREAM, type SoakServer } from './fixture.js';

export type Answer = { status: number; contentType: string; text: string } | { error: string };

export interface Outgoing {
  kind: string;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Why the answer is not what it should be; undefined when it is. Runs once per answer. */
  judge(answer: { status: number; contentType: string; text: string }): string | undefined;
}

/** The kinds, in the order tables print them, and each one's share of the traffic. */
export const MIX: ReadonlyArray<{ kind: string; weight: number }> = [
  { kind: 'authorize allow', weight: 25 },
  { kind: 'authorize deny', weight: 6 },
  { kind: 'authorize review', weight: 4 },
  { kind: 'settle', weight: 12 },
  { kind: 'verify', weight: 12 },
  { kind: 'chat', weight: 10 },
  { kind: 'chat stream', weight: 10 },
  { kind: 'mcp tools/call', weight: 10 },
  { kind: 'console agents', weight: 3 },
  { kind: 'console approvals', weight: 3 },
  { kind: 'console ledger', weight: 3 },
  { kind: 'console approve', weight: 2 },
];

/** Share of requests that reach the gate as some agent (authorize, settle, MCP calls). */
export const GATE_SHARE =
  MIX.filter((m) => /^authorize|^settle|^mcp/.test(m.kind)).reduce((n, m) => n + m.weight, 0) /
  MIX.reduce((n, m) => n + m.weight, 0);

const MODEL = 'small';
const TOOL_TEXT = 'Summarize ticket 4521: the customer cannot sign in since the v2.3 update.';
const MCP_HEADERS = {
  accept: 'application/json, text/event-stream',
  'content-type': 'application/json',
  'mcp-protocol-version': '2025-11-25',
};
const JSON_HEADERS = { 'content-type': 'application/json' };
/** Kept to bound the driver's own memory over a long run. */
const KEEP = 2000;

/** mulberry32: small, seeded, good enough to pick agents and pages. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The fields of the answers that the judges read (an action, a verification, a list, a completion, JSON-RPC). */
interface Body {
  id?: unknown;
  decision?: string;
  reason?: string;
  receipt?: unknown;
  approvalId?: unknown;
  status?: string;
  valid?: boolean;
  data?: unknown;
  choices?: Array<{ message?: { content?: unknown } }>;
  result?: { isError?: boolean; content?: Array<{ text?: string }> };
  error?: { code?: number };
}

const parse = (text: string): Body | undefined => {
  try {
    const body: unknown = JSON.parse(text);
    return body !== null && typeof body === 'object' ? (body as Body) : undefined;
  } catch {
    return undefined;
  }
};

/** The JSON-RPC answer to request id 1, from a JSON body or from an event stream's messages. */
function rpcAnswer(answer: { contentType: string; text: string }): Body | undefined {
  if (!answer.contentType.includes('text/event-stream')) return parse(answer.text);
  for (const line of answer.text.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const message = parse(line.slice(5));
    if (message?.id === 1 && (message.result !== undefined || message.error !== undefined)) return message;
  }
  return undefined;
}

export function createMix(fx: SoakServer, seed = 20261124) {
  const random = seeded(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const agentKey = (i: number) => ({ authorization: `Bearer ${fx.agents[i]!.key}` });
  const wid = fx.workspaceId;
  const session = { cookie: fx.cookie };

  const toSettle: Array<{ id: string; agent: number }> = [];
  const fresh: string[] = [];
  const seen: string[] = [];
  const toDecide: string[] = [];
  let ledgerTail = 0;
  let serial = 0;
  let gateTurn = 0;
  const credit = MIX.map(() => 0);
  const total = MIX.reduce((n, m) => n + m.weight, 0);
  const push = <T>(xs: T[], x: T) => {
    xs.push(x);
    if (xs.length > KEEP) xs.shift();
  };

  const authorize = (kind: string, payment: object, expect: 'allow' | 'deny' | 'review'): Outgoing => {
    const agent = gateTurn++ % fx.agents.length;
    serial += 1;
    return {
      kind,
      method: 'POST',
      path: '/v1/actions/authorize',
      headers: { ...agentKey(agent), ...JSON_HEADERS },
      body: JSON.stringify({ type: 'payment', summary: `Pay invoice ${serial} to Acme`, payment }),
      judge(a) {
        const body = parse(a.text);
        if (a.status !== 200) return `status ${a.status}`;
        if (body?.decision !== expect) return `decision ${body?.decision} (${body?.reason})`;
        if (expect === 'allow') {
          if (typeof body.receipt !== 'string') return 'allow without a receipt';
          push(toSettle, { id: body.id as string, agent });
          push(fresh, body.receipt as string);
        }
        if (expect === 'review') {
          if (typeof body.approvalId !== 'string') return 'review without an approval';
          push(toDecide, body.approvalId as string);
        }
        return undefined;
      },
    };
  };
  const allow = () =>
    authorize('authorize allow', { amount: 1200, currency: PAYMENT.currency, merchant: PAYMENT.merchant }, 'allow');

  const makers: Record<string, () => Outgoing> = {
    'authorize allow': allow,
    'authorize deny': () =>
      authorize(
        'authorize deny',
        // Alternately another merchant, and over the rule's maximum.
        serial % 2 === 0
          ? { amount: 1200, currency: PAYMENT.currency, merchant: 'elsewhere.example' }
          : { amount: PAYMENT.max + 1, currency: PAYMENT.currency, merchant: PAYMENT.merchant },
        'deny',
      ),
    'authorize review': () =>
      authorize(
        'authorize review',
        { amount: PAYMENT.approvalAbove + 1000, currency: PAYMENT.currency, merchant: PAYMENT.merchant },
        'review',
      ),
    settle: () => {
      const action = toSettle.shift();
      if (!action) return allow();
      return {
        kind: 'settle',
        method: 'POST',
        path: `/v1/actions/${action.id}/settle`,
        headers: { ...agentKey(action.agent), ...JSON_HEADERS },
        body: JSON.stringify({ status: 'completed', amount: 1200 }),
        judge: (a) =>
          a.status !== 200 ? `status ${a.status}` : parse(a.text)?.status !== 'settled' ? 'not settled' : undefined,
      };
    },
    verify: () => {
      const receipt = fresh.shift() ?? (seen.length > 0 ? pick(seen) : undefined);
      if (!receipt) return allow();
      push(seen, receipt);
      return {
        kind: 'verify',
        method: 'POST',
        path: '/v1/verify',
        headers: JSON_HEADERS,
        body: JSON.stringify({ receipt }),
        judge: (a) =>
          a.status !== 200 ? `status ${a.status}` : parse(a.text)?.valid !== true ? 'receipt not valid' : undefined,
      };
    },
    chat: () => chat(false),
    'chat stream': () => chat(true),
    'mcp tools/call': () => ({
      kind: 'mcp tools/call',
      method: 'POST',
      path: '/mcp',
      headers: { ...agentKey(gateTurn++ % fx.agents.length), ...MCP_HEADERS },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: `${UPSTREAM.name}__${UPSTREAM.tool}`, arguments: { text: TOOL_TEXT } },
      }),
      judge(a) {
        if (a.status !== 200) return `status ${a.status}`;
        const rpc = rpcAnswer(a);
        if (!rpc) return 'no JSON-RPC answer';
        if (rpc.error) return `JSON-RPC error ${rpc.error.code}`;
        if (rpc.result?.isError) return 'tool result isError';
        return rpc.result?.content?.[0]?.text === TOOL_TEXT ? undefined : 'wrong tool result';
      },
    }),
    'console agents': () => ({
      kind: 'console agents',
      method: 'GET',
      path: `/api/w/${wid}/agents?limit=200`,
      headers: session,
      judge: (a) =>
        a.status !== 200
          ? `status ${a.status}`
          : (parse(a.text)?.data as unknown[] | undefined)?.length !== fx.agents.length
            ? 'wrong number of agents'
            : undefined,
    }),
    'console approvals': () => ({
      kind: 'console approvals',
      method: 'GET',
      path: `/api/w/${wid}/approvals?status=pending`,
      headers: session,
      judge: (a) =>
        a.status !== 200 ? `status ${a.status}` : Array.isArray(parse(a.text)?.data) ? undefined : 'no list',
    }),
    'console ledger': () => {
      // Half follow the tail as a watching auditor would, half read a page anywhere before it.
      const after = serial % 2 === 0 ? Math.max(0, ledgerTail - 1) : Math.floor(random() * ledgerTail);
      return {
        kind: 'console ledger',
        method: 'GET',
        path: `/api/w/${wid}/ledger?after=${after}&limit=50`,
        headers: session,
        judge(a) {
          if (a.status !== 200) return `status ${a.status}`;
          const data = parse(a.text)?.data;
          if (!Array.isArray(data)) return 'no list';
          for (const r of data as Array<{ index: number }>) ledgerTail = Math.max(ledgerTail, r.index);
          return undefined;
        },
      };
    },
    'console approve': () => {
      const id = toDecide.shift();
      if (!id) return allow();
      return {
        kind: 'console approve',
        method: 'POST',
        path: `/api/w/${wid}/approvals/${id}/approve`,
        headers: { ...session, ...JSON_HEADERS, 'x-svc-csrf': '1' },
        body: JSON.stringify({ note: 'soak' }),
        judge: (a) =>
          a.status !== 200 ? `status ${a.status}` : parse(a.text)?.status !== 'approved' ? 'not approved' : undefined,
      };
    },
  };

  function chat(stream: boolean): Outgoing {
    serial += 1;
    return {
      kind: stream ? 'chat stream' : 'chat',
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { authorization: `Bearer ${fx.inferenceKey}`, ...JSON_HEADERS },
      body: JSON.stringify({
        model: MODEL,
        stream,
        messages: [
          { role: 'system', content: 'You are a support assistant.' },
          { role: 'user', content: `Summarize ticket ${serial}: the customer cannot sign in since the update.` },
        ],
      }),
      judge(a) {
        if (a.status !== 200) return `status ${a.status}`;
        if (stream) return /data: \[DONE\]\s*$/.test(a.text) ? undefined : 'stream cut before [DONE]';
        return typeof parse(a.text)?.choices?.[0]?.message?.content === 'string' ? undefined : 'no completion';
      },
    };
  }

  return {
    /** A request of one kind (or an allowed authorize, when that kind needs what no answer gave yet). */
    make(kind: string): Outgoing {
      const maker = makers[kind];
      if (!maker) throw new Error(`no kind of request ${kind}`);
      return maker();
    },
    /** The next request of the fixed sequence. */
    next(): Outgoing {
      let best = 0;
      for (let i = 0; i < MIX.length; i += 1) {
        credit[i]! += MIX[i]!.weight;
        if (credit[i]! > credit[best]!) best = i;
      }
      credit[best]! -= total;
      return makers[MIX[best]!.kind]!();
    },
  };
}
