import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { anthropicUsageOf, openaiUsageOf, responsesUsageOf, type CacheUsage } from './cache-usage.js';
import type { Json } from './http.js';

/**
 * A stand-in for two outside model vendors, one OpenAI-shaped (POST /v1/chat/completions,
 * /v1/responses, /v1/embeddings) and one Anthropic-shaped (POST /v1/messages,
 * /v1/messages/count_tokens), on a real 127.0.0.1 socket, for the gateway's tests and
 * benchmarks. Only node:http, so it adds nothing to a benchmark's profile. Each endpoint checks
 * the credentials and the required fields its vendor does.
 *
 * Invariants the tests rely on:
 * - Replies are deterministic: `echo: ` + the last user message's text; token counts are word
 *   counts (prompt: every message and the system prompt, at least 1; completion: the reply's words,
 *   5 for a tool call). A max-tokens limit below the reply's word count truncates it to that many
 *   words and reports a length stop.
 * - A tool call is answered, instead of text, when the request offers tools and the conversation
 *   ends with a user message saying "call tool"; a later turn (after the tool result) gets text, so
 *   an agent loop over the mock ends.
 * - Streamed deltas concatenate to exactly the non-streaming text, and each SSE event is its own
 *   write, so a `cut` fault lands between whole events.
 * - Every request to any endpoint is recorded in `calls`, faulted and malformed ones included,
 *   before any fault or check applies. Faults are keyed by the body's `model` and queue in order.
 * - Responses: the same replies in the Responses shape and event sequence; `store: true` keeps a
 *   response, and `previous_response_id` continues a kept one (an unknown id is a 400, as live).
 * - Embeddings: `dimensions` numbers (8 by default) derived from each input's text, the same for
 *   the same text; base64 when asked (little-endian float32). Usage: the input's word count
 *   (a token array's length).
 * - Token counts: the prompt's word count, as the replies' usage counts it.
 * - OpenAI chat completions: a field it does not know, and a tool-call id over 40 characters, are
 *   refused, as OpenAI refuses them.
 * - Anthropic: an `anthropic-beta` value it does not know is refused, and so is a beta-only field
 *   (`context_management`) sent without its beta, as Anthropic refuses them.
 */

export type Fault =
  | { kind: 'status'; status: number; retryAfterSeconds?: number }
  /** Answers this status, body and headers (a vendor's own error shape, e.g. a context-length refusal). */
  | { kind: 'answer'; status: number; body: Json; headers?: Record<string, string> }
  | { kind: 'hang' }
  | { kind: 'reset' }
  | { kind: 'cut'; afterChunks: number }
  | { kind: 'delay'; ms: number }
  /** Answers with this text instead of the echo; streamed one piece per event (any split). */
  | { kind: 'reply'; pieces: string[] }
  /** Answers with prompt-cache and reasoning tokens in its usage (cache-usage.ts). */
  | { kind: 'cache'; usage: CacheUsage }
  /**
   * Answers with a call of this tool and these arguments (JSON text; a custom tool's input text
   * when `custom`, answered as a Responses `custom_tool_call`), as an agent's scripted turn.
   */
  | { kind: 'call'; name: string; arguments: string; custom?: boolean };

export interface VendorCall {
  vendor: 'openai' | 'anthropic';
  path: string;
  model: string;
  stream: boolean;
  headers: Record<string, string | string[] | undefined>;
  body: Json;
}

export interface MockVendor {
  /** http://127.0.0.1:PORT */
  url: string;
  /** `${url}/v1`: an OpenAI-kind base URL ends before /chat/completions. */
  openaiBase: string;
  /** `${url}`: an Anthropic-kind base URL ends before /v1/messages. */
  anthropicBase: string;
  /** Every request received by either endpoint, in order, faulted ones included. */
  calls: VendorCall[];
  /** Requests received, for one upstream model name when given. */
  count(model?: string): number;
  /** The next `times` requests (default 1; Infinity allowed) for that model get the fault. */
  fault(model: string, fault: Fault, times?: number): void;
  /** Forgets calls and faults. */
  reset(): void;
  /** Closes the server and destroys open sockets, hung requests included. */
  close(): Promise<void>;
}

type Vendor = VendorCall['vendor'];
type Res = http.ServerResponse;

/** What either vendor answers, before it is put in that vendor's shape. */
interface Reply {
  /** Text pieces, each with its leading whitespace, so joining them gives the exact text. */
  pieces: string[];
  /** The first offered tool's name when the reply is a tool call. */
  tool?: string;
  /** The call's arguments (JSON text) when scripted; else TOOL_ARGUMENTS. */
  arguments?: string;
  /** A Responses custom tool's call (its input is `arguments`, as text). */
  custom?: boolean;
  truncated: boolean;
  promptTokens: number;
  completionTokens: number;
}

const ROUTES: Record<string, Vendor> = {
  '/v1/chat/completions': 'openai',
  '/v1/responses': 'openai',
  '/v1/embeddings': 'openai',
  '/v1/messages': 'anthropic',
  '/v1/messages/count_tokens': 'anthropic',
};
const TOOL_ARGUMENTS = '{"q":"x"}';
// The argument JSON is streamed in two pieces, as vendors split it mid-value.
const TOOL_ARGUMENT_PIECES = ['{"q":', '"x"}'];
const argumentsOf = (reply: Reply): string => reply.arguments ?? TOOL_ARGUMENTS;
/** A scripted call's arguments split in two mid-text, as the default ones are. */
const argumentPieces = (reply: Reply): string[] => {
  if (reply.arguments === undefined) return TOOL_ARGUMENT_PIECES;
  const half = Math.floor(reply.arguments.length / 2);
  return [reply.arguments.slice(0, half), reply.arguments.slice(half)].filter((p) => p !== '');
};

export async function startMockVendor(
  options: { openaiKey?: string; anthropicKey?: string } = {},
): Promise<MockVendor> {
  const keys: Record<Vendor, string> = {
    openai: options.openaiKey ?? 'sk-mock-openai',
    anthropic: options.anthropicKey ?? 'sk-mock-anthropic',
  };
  const calls: VendorCall[] = [];
  const faults = new Map<string, { fault: Fault; left: number }[]>();
  const timers = new Set<NodeJS.Timeout>();
  // Responses kept with store: true, by id: the conversation so far.
  const kept = new Map<string, Json[]>();
  let serial = 0;

  const takeFault = (model: string): Fault | undefined => {
    const queue = faults.get(model);
    const head = queue?.[0];
    if (!queue || !head) return undefined;
    if (--head.left <= 0) queue.shift();
    return head.fault;
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const handle = async (req: http.IncomingMessage, res: Res): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://mock').pathname;
    const vendor = req.method === 'POST' ? ROUTES[path] : undefined;
    if (!vendor)
      return json(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'not_found_error' } });

    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: Json = null;
    let malformed = false;
    try {
      body = JSON.parse(raw);
    } catch {
      malformed = true;
    }
    const model = typeof body?.model === 'string' ? body.model : '';
    const stream = body?.stream === true;
    calls.push({ vendor, path, model, stream, headers: { ...req.headers }, body });

    const fault = takeFault(model);
    if (fault?.kind === 'hang') return;
    if (fault?.kind === 'reset' || (fault?.kind === 'cut' && !stream)) {
      req.socket.destroy();
      return;
    }
    if (fault?.kind === 'status') {
      const headers: Record<string, string> =
        fault.retryAfterSeconds === undefined ? {} : { 'retry-after': String(fault.retryAfterSeconds) };
      return json(res, fault.status, errorBody(vendor, fault.status, `mock fault: status ${fault.status}`), headers);
    }
    if (fault?.kind === 'answer') return json(res, fault.status, fault.body, fault.headers ?? {});
    if (fault?.kind === 'delay') {
      await sleep(fault.ms);
      if (res.destroyed) return;
    }
    if (malformed || body === null || typeof body !== 'object')
      return json(res, 400, errorBody(vendor, 400, 'the body is not a JSON object'));

    const cutAfter = fault?.kind === 'cut' ? fault.afterChunks : Infinity;
    const id = ++serial;
    const pieces = fault?.kind === 'reply' ? fault.pieces : undefined;
    const cache = fault?.kind === 'cache' ? fault.usage : undefined;
    const call = fault?.kind === 'call' ? fault : undefined;
    const exchange = { req, res, body, key: keys[vendor], id, cutAfter, pieces, cache, call };
    if (path === '/v1/responses') return responses(exchange, kept);
    if (path === '/v1/embeddings') return embeddings(exchange);
    if (path === '/v1/messages/count_tokens') return countTokens(exchange);
    if (vendor === 'openai') return openai(exchange);
    return anthropic(exchange);
  };

  const server = http.createServer({ keepAlive: true }, (req, res) => {
    // A client that goes away mid-answer must not take the server down.
    res.on('error', () => {});
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) json(res, 500, { error: { message: String(error), type: 'server_error' } });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    openaiBase: `${url}/v1`,
    anthropicBase: url,
    calls,
    count: (model) => (model === undefined ? calls.length : calls.filter((c) => c.model === model).length),
    fault(model, fault, times = 1) {
      if (!(times > 0)) throw new RangeError(`times must be positive, got ${times}`);
      faults.set(model, [...(faults.get(model) ?? []), { fault, left: times }]);
    },
    reset() {
      // Emptied in place, so a test holding `vendor.calls` sees the reset too.
      calls.length = 0;
      faults.clear();
      kept.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

interface Exchange {
  req: http.IncomingMessage;
  res: Res;
  body: Json;
  key: string;
  id: number;
  /** Number of SSE events to send before destroying the socket (the `cut` fault). */
  cutAfter: number;
  /** A scripted reply's text pieces (the `reply` fault). */
  pieces: string[] | undefined;
  /** Prompt-cache and reasoning tokens to report (the `cache` fault). */
  cache: CacheUsage | undefined;
  /** A scripted tool call (the `call` fault). */
  call: Extract<Fault, { kind: 'call' }> | undefined;
}

/** The scripted reply instead of the composed one. */
const scripted = (reply: Reply, pieces: string[] | undefined, call?: Extract<Fault, { kind: 'call' }>): Reply =>
  call
    ? {
        pieces: [],
        tool: call.name,
        arguments: call.arguments,
        ...(call.custom ? { custom: true } : {}),
        truncated: false,
        promptTokens: reply.promptTokens,
        completionTokens: 5,
      }
    : pieces
      ? {
          pieces,
          truncated: false,
          promptTokens: reply.promptTokens,
          completionTokens: pieces.join('').split(/\s+/).filter(Boolean).length,
        }
      : reply;

function openai({ req, res, body, key, id, cutAfter, pieces, cache, call }: Exchange): Promise<void> | void {
  if (req.headers.authorization !== `Bearer ${key}`) {
    return json(res, 401, {
      error: {
        message: 'Incorrect API key provided.',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      },
    });
  }
  for (const field of ['model', 'messages'] as const) {
    if (!body[field] || (field === 'messages' && !Array.isArray(body.messages))) {
      return json(res, 400, {
        error: {
          message: `Missing required parameter: '${field}'.`,
          type: 'invalid_request_error',
          param: field,
          code: 'missing_required_parameter',
        },
      });
    }
  }
  const unknown = Object.keys(body).find((k) => !CHAT_FIELDS.has(k));
  if (unknown !== undefined)
    return json(res, 400, {
      error: {
        message: `Unrecognized request argument supplied: ${unknown}`,
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    });
  const messages: Json[] = body.messages;
  const tooLong = toolIdTooLong(messages);
  if (tooLong) return json(res, 400, tooLong);
  const tools: Json[] = Array.isArray(body.tools) ? body.tools : [];
  const reply = scripted(
    compose({
      messages,
      toolName: tools[0]?.function?.name,
      maxTokens: body.max_completion_tokens ?? body.max_tokens,
    }),
    pieces,
    call,
  );
  const text = reply.tool ? null : reply.pieces.join('');
  const finish = reply.tool ? 'tool_calls' : reply.truncated ? 'length' : 'stop';
  const usage = openaiUsageOf(reply, cache);
  const head = { id: `chatcmpl-mock${id}`, created: Math.floor(Date.now() / 1000), model: body.model };

  if (body.stream !== true) {
    const toolCalls = reply.tool
      ? [{ id: 'call_1', type: 'function', function: { name: reply.tool, arguments: argumentsOf(reply) } }]
      : undefined;
    return json(res, 200, {
      ...head,
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: text, ...(toolCalls ? { tool_calls: toolCalls } : {}) },
          finish_reason: finish,
          logprobs: null,
        },
      ],
      usage,
    });
  }

  const withUsage = body.stream_options?.include_usage === true;
  const chunk = (delta: object, finishReason: string | null = null): object => ({
    ...head,
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
    ...(withUsage ? { usage: null } : {}),
  });
  const events: object[] = [chunk({ role: 'assistant', content: reply.tool ? null : '' })];
  if (reply.tool) {
    events.push(
      chunk({
        tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: reply.tool, arguments: '' } }],
      }),
    );
    for (const piece of argumentPieces(reply))
      events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
  } else {
    for (const piece of reply.pieces) events.push(chunk({ content: piece }));
  }
  events.push(chunk({}, finish));
  if (withUsage) events.push({ ...head, object: 'chat.completion.chunk', choices: [], usage });
  const lines = events.map((event) => `data: ${JSON.stringify(event)}\n\n`);
  lines.push('data: [DONE]\n\n');
  return sse(res, lines, cutAfter);
}

/**
 * The betas the mock knows (those Claude Code 2.1 and the SDK send, and other published ones):
 * another value of `anthropic-beta` is refused, as Anthropic refuses one it does not know.
 */
const KNOWN_BETAS = new Set([
  'token-counting-2024-11-01',
  'prompt-caching-2024-07-31',
  'output-128k-2025-02-19',
  'fine-grained-tool-streaming-2025-05-14',
  'extended-cache-ttl-2025-04-11',
  'files-api-2025-04-14',
  'claude-code-20250219',
  'interleaved-thinking-2025-05-14',
  'context-management-2025-06-27',
  'per-turn-control-2026-07-01',
  'mid-conversation-tool-changes-2026-07-01',
  'thinking-token-count-2026-05-13',
  'advanced-tool-use-2025-11-20',
  'effort-2025-11-24',
  'thinking-display-updates-2026-08-18',
  'context-1m-2025-08-07',
]);
/** Fields Anthropic takes only with their beta in `anthropic-beta`; without it, an extra input. */
const BETA_FIELDS: Record<string, string> = { context_management: 'context-management-2025-06-27' };

/** Anthropic's refusal of the request's betas, or null. */
function betaRefusal(req: http.IncomingMessage, body: Json): string | null {
  const header = req.headers['anthropic-beta'];
  const betas = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  const unknown = betas.filter((b) => !KNOWN_BETAS.has(b));
  if (unknown.length > 0) return `Unexpected value(s) \`${unknown.join(', ')}\` for the \`anthropic-beta\` header.`;
  for (const [field, beta] of Object.entries(BETA_FIELDS))
    if (body[field] !== undefined && !betas.includes(beta)) return `${field}: Extra inputs are not permitted`;
  return null;
}

function anthropic({ req, res, body, key, id, cutAfter, pieces, cache, call }: Exchange): Promise<void> | void {
  const apiKey = req.headers['x-api-key'] ?? req.headers.authorization?.replace(/^Bearer /, '');
  if (apiKey !== key) return json(res, 401, errorBody('anthropic', 401, 'invalid x-api-key'));
  if (!req.headers['anthropic-version'])
    return json(res, 400, errorBody('anthropic', 400, 'anthropic-version: header is required'));
  const refused = betaRefusal(req, body);
  if (refused) return json(res, 400, errorBody('anthropic', 400, refused));
  if (typeof body.model !== 'string' || !body.model)
    return json(res, 400, errorBody('anthropic', 400, 'model: Field required'));
  if (typeof body.max_tokens !== 'number')
    return json(res, 400, errorBody('anthropic', 400, 'max_tokens: Field required'));
  if (!Array.isArray(body.messages)) return json(res, 400, errorBody('anthropic', 400, 'messages: Field required'));

  const tools: Json[] = Array.isArray(body.tools) ? body.tools : [];
  const reply = scripted(
    compose({
      messages: body.messages,
      system: body.system,
      toolName: tools[0]?.name,
      maxTokens: body.max_tokens,
    }),
    pieces,
    call,
  );
  const stop = reply.tool ? 'tool_use' : reply.truncated ? 'max_tokens' : 'end_turn';
  const toolBlock = { type: 'tool_use', id: 'toolu_1', name: reply.tool };
  const message = { id: `msg_mock${id}`, type: 'message', role: 'assistant', model: body.model };

  if (body.stream !== true) {
    const content = reply.tool
      ? [{ ...toolBlock, input: JSON.parse(argumentsOf(reply)) }]
      : [{ type: 'text', text: reply.pieces.join('') }];
    return json(res, 200, {
      ...message,
      content,
      stop_reason: stop,
      stop_sequence: null,
      usage: anthropicUsageOf(reply, cache),
    });
  }

  const events: [string, object][] = [
    [
      'message_start',
      {
        message: {
          ...message,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: anthropicUsageOf(reply, cache, 1),
        },
      },
    ],
    [
      'content_block_start',
      { index: 0, content_block: reply.tool ? { ...toolBlock, input: {} } : { type: 'text', text: '' } },
    ],
    ['ping', {}],
  ];
  const deltas = reply.tool
    ? argumentPieces(reply).map((piece) => ({ type: 'input_json_delta', partial_json: piece }))
    : reply.pieces.map((piece) => ({ type: 'text_delta', text: piece }));
  for (const delta of deltas) events.push(['content_block_delta', { index: 0, delta }]);
  events.push(
    ['content_block_stop', { index: 0 }],
    [
      'message_delta',
      { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: reply.completionTokens } },
    ],
    ['message_stop', {}],
  );
  return sse(
    res,
    events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`),
    cutAfter,
  );
}

/** The chat-completions request's fields OpenAI knows; it refuses any other. */
const CHAT_FIELDS = new Set([
  'model',
  'messages',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'functions',
  'function_call',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'n',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'user',
  'seed',
  'response_format',
  'reasoning_effort',
  'service_tier',
  'store',
  'metadata',
  'modalities',
  'audio',
  'prediction',
  'web_search_options',
  'verbosity',
  'safety_identifier',
  'prompt_cache_key',
]);

/** OpenAI's refusal of a tool-call id over its 40 characters (a call's or a result's), or null. */
export function toolIdTooLong(messages: Json[]): object | null {
  for (const [i, m] of messages.entries()) {
    const ids: [string, unknown][] = [
      [`messages[${i}].tool_call_id`, m?.tool_call_id],
      ...((Array.isArray(m?.tool_calls) ? m.tool_calls : []) as Json[]).map((c, j): [string, unknown] => [
        `messages[${i}].tool_calls[${j}].id`,
        c?.id,
      ]),
    ];
    for (const [param, id] of ids)
      if (typeof id === 'string' && id.length > 40)
        return {
          error: {
            message: `Invalid '${param}': string too long. Expected a string with maximum length 40, but got a string with length ${id.length} instead.`,
            type: 'invalid_request_error',
            param,
            code: 'string_above_max_length',
          },
        };
  }
  return null;
}

const openaiUnauthorized = (res: Res): void =>
  json(res, 401, {
    error: {
      message: 'Incorrect API key provided.',
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_api_key',
    },
  });

const openaiMissing = (res: Res, field: string): void =>
  json(res, 400, {
    error: {
      message: `Missing required parameter: '${field}'.`,
      type: 'invalid_request_error',
      param: field,
      code: 'missing_required_parameter',
    },
  });

/** A Responses input as chat-like messages for `compose` (text only; function outputs as tool turns). */
function responsesMessages(body: Json): Json[] {
  const messages: Json[] = [];
  if (typeof body.input === 'string') return [{ role: 'user', content: body.input }];
  for (const item of body.input as Json[]) {
    const type = item?.type ?? 'message';
    if (type === 'message') messages.push({ role: item.role, content: responsesText(item.content) });
    else if (type === 'function_call') messages.push({ role: 'assistant', content: '' });
    else if (type === 'function_call_output') messages.push({ role: 'tool', content: responsesText(item.output) });
  }
  return messages;
}

function responsesText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p: Json) => (typeof p?.text === 'string' ? p.text : ''))
    .filter(Boolean)
    .join(' ');
}

function responses(
  { req, res, body, key, id, cutAfter, pieces, cache, call }: Exchange,
  kept: Map<string, Json[]>,
): Promise<void> | void {
  if (req.headers.authorization !== `Bearer ${key}`) return openaiUnauthorized(res);
  if (!body.model) return openaiMissing(res, 'model');
  if (body.input === undefined || (typeof body.input !== 'string' && !Array.isArray(body.input)))
    return openaiMissing(res, 'input');
  let earlier: Json[] = [];
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    const found = kept.get(body.previous_response_id);
    if (!found)
      return json(res, 400, {
        error: {
          message: `Previous response with id '${body.previous_response_id}' not found.`,
          type: 'invalid_request_error',
          param: 'previous_response_id',
          code: 'previous_response_not_found',
        },
      });
    earlier = found;
  }
  const messages = [...earlier, ...responsesMessages(body)];
  const tools: Json[] = Array.isArray(body.tools) ? body.tools : [];
  const reply = scripted(
    compose({
      messages,
      system: body.instructions,
      toolName: tools.find((t) => t?.type === 'function')?.name,
      maxTokens: body.max_output_tokens,
    }),
    pieces,
    call,
  );
  const rid = `resp_mock${id}`;
  const text = reply.pieces.join('');
  const usage = responsesUsageOf(reply, cache);
  const messageItem = (t: string, status: string) => ({
    id: `msg_mock${id}`,
    type: 'message',
    status,
    role: 'assistant',
    content: [{ type: 'output_text', text: t, annotations: [], logprobs: [] }],
  });
  const callItem = (args: string, status: string) =>
    reply.custom
      ? { id: `ctc_mock${id}`, type: 'custom_tool_call', status, call_id: 'call_1', name: reply.tool, input: args }
      : { id: `fc_mock${id}`, type: 'function_call', status, call_id: 'call_1', name: reply.tool, arguments: args };
  const status = reply.truncated ? 'incomplete' : 'completed';
  const envelope = (st: string, output: object[], withUsage: boolean) => ({
    id: rid,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: st,
    error: null,
    incomplete_details: st === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    model: body.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: body.previous_response_id ?? null,
    store: body.store === true,
    tool_choice: body.tool_choice ?? 'auto',
    tools,
    usage: withUsage ? usage : null,
  });
  const finalItem = reply.tool ? callItem(argumentsOf(reply), 'completed') : messageItem(text, 'completed');
  if (body.store === true) kept.set(rid, [...messages, { role: 'assistant', content: text }]);

  if (body.stream !== true) return json(res, 200, envelope(status, [finalItem], true));

  let seq = 0;
  const events: [string, object][] = [];
  const push = (type: string, data: object) => events.push([type, { type, sequence_number: seq++, ...data }]);
  push('response.created', { response: envelope('in_progress', [], false) });
  push('response.in_progress', { response: envelope('in_progress', [], false) });
  if (reply.tool) {
    push('response.output_item.added', { output_index: 0, item: callItem('', 'in_progress') });
    const itemId = reply.custom ? `ctc_mock${id}` : `fc_mock${id}`;
    const kind = reply.custom ? 'custom_tool_call_input' : 'function_call_arguments';
    for (const piece of argumentPieces(reply))
      push(`response.${kind}.delta`, { item_id: itemId, output_index: 0, delta: piece });
    push(`response.${kind}.done`, {
      item_id: itemId,
      output_index: 0,
      [reply.custom ? 'input' : 'arguments']: argumentsOf(reply),
    });
  } else {
    const item = { item_id: `msg_mock${id}`, output_index: 0, content_index: 0 };
    push('response.output_item.added', { output_index: 0, item: { ...messageItem('', 'in_progress'), content: [] } });
    push('response.content_part.added', { ...item, part: { type: 'output_text', text: '', annotations: [] } });
    for (const piece of reply.pieces) push('response.output_text.delta', { ...item, delta: piece, logprobs: [] });
    push('response.output_text.done', { ...item, text, logprobs: [] });
    push('response.content_part.done', { ...item, part: { type: 'output_text', text, annotations: [] } });
  }
  push('response.output_item.done', { output_index: 0, item: finalItem });
  push(reply.truncated ? 'response.incomplete' : 'response.completed', {
    response: envelope(status, [finalItem], true),
  });
  return sse(
    res,
    events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`),
    cutAfter,
  );
}

function embeddings({ req, res, body, key }: Exchange): void {
  if (req.headers.authorization !== `Bearer ${key}`) return openaiUnauthorized(res);
  if (!body.model) return openaiMissing(res, 'model');
  const input: unknown = body.input;
  const inputs: unknown[] =
    typeof input === 'string' || (Array.isArray(input) && typeof input[0] === 'number')
      ? [input]
      : Array.isArray(input)
        ? input
        : [];
  if (inputs.length === 0) return openaiMissing(res, 'input');
  const dimensions = typeof body.dimensions === 'number' ? body.dimensions : 8;
  let tokens = 0;
  const data = inputs.map((one, index) => {
    const text = typeof one === 'string' ? one : JSON.stringify(one);
    tokens += typeof one === 'string' ? Math.max(1, words(one).length) : Array.isArray(one) ? one.length : 1;
    const vector = Array.from({ length: dimensions }, (_, d) => {
      let h = 2166136261 ^ d;
      for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
      return ((h >>> 0) / 4294967296) * 2 - 1;
    });
    const embedding =
      body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  return json(res, 200, {
    object: 'list',
    data,
    model: body.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}

function countTokens({ req, res, body, key }: Exchange): void {
  const apiKey = req.headers['x-api-key'] ?? req.headers.authorization?.replace(/^Bearer /, '');
  if (apiKey !== key) return json(res, 401, errorBody('anthropic', 401, 'invalid x-api-key'));
  if (!req.headers['anthropic-version'])
    return json(res, 400, errorBody('anthropic', 400, 'anthropic-version: header is required'));
  const refused = betaRefusal(req, body);
  if (refused) return json(res, 400, errorBody('anthropic', 400, refused));
  if (typeof body.model !== 'string' || !body.model)
    return json(res, 400, errorBody('anthropic', 400, 'model: Field required'));
  if (!Array.isArray(body.messages)) return json(res, 400, errorBody('anthropic', 400, 'messages: Field required'));
  const reply = compose({ messages: body.messages, system: body.system });
  return json(res, 200, { input_tokens: reply.promptTokens });
}

/** The deterministic reply and its word-count usage (see the rules at the top of the file). */
function compose(input: { messages: Json[]; system?: unknown; toolName?: unknown; maxTokens?: unknown }): Reply {
  const { messages } = input;
  const promptWords = [input.system, ...messages.map((m) => m?.content)].reduce<number>(
    (sum, content) => sum + words(textOf(content)).length,
    0,
  );
  const promptTokens = Math.max(1, promptWords);
  const last = messages.at(-1);
  const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
  const userText = textOf(lastUser?.content);

  if (typeof input.toolName === 'string' && last?.role === 'user' && /\bcall tool\b/i.test(textOf(last.content))) {
    return { pieces: [], tool: input.toolName, truncated: false, promptTokens, completionTokens: 5 };
  }
  const all = `echo: ${userText}`.trimEnd().match(/\s*\S+/g) ?? [];
  const limit = typeof input.maxTokens === 'number' ? Math.max(0, Math.floor(input.maxTokens)) : Infinity;
  const pieces = all.slice(0, limit);
  return { pieces, truncated: pieces.length < all.length, promptTokens, completionTokens: pieces.length };
}

/** The text of a message content: a string, or the text of its blocks (tool results included). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block: { type?: unknown; text?: unknown; content?: unknown } | null) =>
      block?.type === 'text' && typeof block.text === 'string'
        ? block.text
        : block?.type === 'tool_result'
          ? textOf(block.content)
          : '',
    )
    .filter((text) => text !== '')
    .join(' ');
}

function words(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}

/** The vendor's own error body for a status, so SDKs and the gateway parse it as they would live. */
function errorBody(vendor: Vendor, status: number, message: string): object {
  if (vendor === 'anthropic') {
    const type =
      status === 400
        ? 'invalid_request_error'
        : status === 401
          ? 'authentication_error'
          : status === 403
            ? 'permission_error'
            : status === 404
              ? 'not_found_error'
              : status === 413
                ? 'request_too_large'
                : status === 429
                  ? 'rate_limit_error'
                  : status === 503 || status === 529
                    ? 'overloaded_error'
                    : 'api_error';
    return { type: 'error', error: { type, message } };
  }
  const [type, code] =
    status === 429
      ? ['requests', 'rate_limit_exceeded']
      : status === 401
        ? ['invalid_request_error', 'invalid_api_key']
        : status >= 500
          ? ['server_error', null]
          : ['invalid_request_error', null];
  return { error: { message, type, param: null, code } };
}

function json(res: Res, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Writes each event on its own and waits for it to reach the socket; after `cutAfter` events, destroys it. */
async function sse(res: Res, events: string[], cutAfter: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let sent = 0;
  for (const event of events) {
    if (sent >= cutAfter) {
      res.socket?.destroy();
      return;
    }
    const ok = await new Promise<boolean>((resolve) => res.write(event, (error) => resolve(!error)));
    if (!ok || res.destroyed) return;
    sent++;
  }
  res.end();
}
