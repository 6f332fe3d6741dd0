import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import {
  acceptedContent,
  CLIENT_CAPABILITIES_META_KEY,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  ProtocolError,
  Server as ModernServer,
  type InputRequests,
  type McpHttpHandler,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport, type EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { answerWith, isModernRequest } from '../../src/mcp/modern.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  isInitializeRequest,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  LoggingLevelSchema,
  McpError,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type ElicitRequestFormParams,
  type GetPromptResult,
  type JSONRPCMessage,
  type LoggingLevel,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * The MCP conformance suite's "everything server", as a fixture upstream: everything the server
 * scenarios of `@modelcontextprotocol/conformance` check at 2025-11-25 (tools, resources, templates,
 * prompts, completion, logging, subscriptions, SSE resumability), so the proxy can be run through the
 * suite with this behind it. Outside the product, so a real HTTP server on 127.0.0.1 built with the SDK,
 * stateful (one Server + transport per session) because several scenarios need session behaviour.
 *
 * It serves protocol 2026-07-28 too, on the same endpoint (requests carrying the per-request
 * envelope), through the official v2 SDK's per-request handler: the same tools, resources and
 * prompts, and the diagnostic fixtures the 2026-07-28 server scenarios name (input_required
 * results with integrity-protected requestState, a tool needing sampling, list-change triggers),
 * as the SDK's own conformance "everything server" has them.
 *
 * Server→client traffic uses the SDK's ordinary per-request APIs (`extra.sendRequest`,
 * `extra.sendNotification`), so it rides the tool call's POST SSE stream; resource-updated
 * notifications have no request to ride and go to the session's standalone GET stream.
 */
export interface ConformanceUpstream {
  /** The full MCP endpoint, `http://127.0.0.1:PORT/mcp`. */
  url: string;
  /** The JSON-RPC methods it received, in order (to show what did, or did not, reach it). */
  methods: string[];
  close(): Promise<void>;
}

export interface ConformanceUpstreamOptions {
  /** How often a subscribed `test://watched-resource` changes (and notifies); default 1000 ms. */
  watchIntervalMs?: number;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;
type Args = Record<string, unknown>;

interface Session {
  server: Server;
  transport: StreamableHTTPServerTransport;
  /** Set by logging/setLevel; log notifications below it are not sent. */
  logLevel?: LoggingLevel;
  /** Bumped each time the watched resource "changes", so reads show the change. */
  watchedRevision: number;
  watchTimer?: NodeJS.Timeout;
}

// A 1x1 green PNG and eight samples of 8 kHz 8-bit silence: the smallest valid media for the content checks.
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGPQ6w4HAAH7ARF0JhTpAAAAAElFTkSuQmCC';
const WAV_BASE64 = 'UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==';
const WATCHED_URI = 'test://watched-resource';
const TEMPLATE_URI = 'test://template/{id}/data';
const LOGGER = 'conformance-upstream';
const NO_ARGS = { type: 'object', properties: {} } as const;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });

// ---------- event store ----------

/**
 * Per-session event store, so POST and GET streams are resumable (priming events, Last-Event-ID replay):
 * server-sse-polling closes a stream mid-call and expects the result on the reconnected stream.
 * Bounded, because a subscribed session without a GET stream keeps storing updates nobody reads.
 */
function createEventStore(limit = 1000): EventStore {
  const events: Array<{ id: number; streamId: string; message: JSONRPCMessage }> = [];
  let next = 1;
  const find = (eventId: string) => events.find((e) => String(e.id) === eventId);
  return {
    async storeEvent(streamId, message) {
      events.push({ id: next, streamId, message });
      if (events.length > limit) events.shift();
      return String(next++);
    },
    async getStreamIdForEventId(eventId) {
      return find(eventId)?.streamId;
    },
    async replayEventsAfter(lastEventId, { send }) {
      const last = find(lastEventId);
      if (!last) throw new Error(`Unknown event id ${lastEventId}`);
      for (const e of events) {
        // Priming events are stored as `{}`: they only mark a position, there is nothing to resend.
        if (e.streamId === last.streamId && e.id > last.id && Object.keys(e.message).length > 0)
          await send(String(e.id), e.message);
      }
      return last.streamId;
    },
  };
}

// ---------- logging ----------

const SEVERITY = LoggingLevelSchema.options;

/** Sends a log message on the request's stream unless logging/setLevel asked for less. */
async function log(session: Session, extra: Extra, level: LoggingLevel, data: string): Promise<void> {
  if (session.logLevel && SEVERITY.indexOf(level) < SEVERITY.indexOf(session.logLevel)) return;
  await extra.sendNotification({ method: 'notifications/message', params: { level, logger: LOGGER, data } });
}

// ---------- tools ----------

interface ToolDef {
  tool: Tool;
  run(args: Args, extra: Extra, session: Session): Promise<CallToolResult>;
}

/** SEP-1613 / SEP-2106: a 2020-12 schema whose keywords a proxy must pass through untouched. */
const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
} as const;

const SEP1034_SCHEMA: ElicitRequestFormParams['requestedSchema'] = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'User name', default: 'John Doe' },
    age: { type: 'integer', description: 'User age', default: 30 },
    score: { type: 'number', description: 'User score', default: 95.5 },
    status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
    verified: { type: 'boolean', description: 'Verification status', default: true },
  },
};

const SEP1330_SCHEMA: ElicitRequestFormParams['requestedSchema'] = {
  type: 'object',
  properties: {
    untitledSingle: { type: 'string', description: 'Pick one', enum: ['option1', 'option2', 'option3'] },
    titledSingle: {
      type: 'string',
      description: 'Pick one (titled)',
      oneOf: [
        { const: 'value1', title: 'First Option' },
        { const: 'value2', title: 'Second Option' },
        { const: 'value3', title: 'Third Option' },
      ],
    },
    legacyEnum: {
      type: 'string',
      description: 'Pick one (legacy titles)',
      enum: ['opt1', 'opt2', 'opt3'],
      enumNames: ['Option One', 'Option Two', 'Option Three'],
    },
    untitledMulti: {
      type: 'array',
      description: 'Pick some',
      items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    },
    titledMulti: {
      type: 'array',
      description: 'Pick some (titled)',
      items: {
        anyOf: [
          { const: 'value1', title: 'First Choice' },
          { const: 'value2', title: 'Second Choice' },
          { const: 'value3', title: 'Third Choice' },
        ],
      },
    },
  },
};

function simple(name: string, description: string, result: CallToolResult): ToolDef {
  return { tool: { name, description, inputSchema: NO_ARGS }, run: async () => result };
}

/** Asks the client for input on the tool call's own stream; refuses when the client never offered elicitation. */
async function elicit(
  session: Session,
  extra: Extra,
  params: ElicitRequestFormParams,
  label: string,
): Promise<CallToolResult> {
  if (!session.server.getClientCapabilities()?.elicitation)
    return { ...text('Client does not support elicitation'), isError: true };
  const result = await extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema);
  return text(`${label}: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
}

const TOOLS: ToolDef[] = [
  simple('test_simple_text', 'Returns simple text content.', text('This is a simple text response for testing.')),
  simple('test_image_content', 'Returns image content.', {
    content: [{ type: 'image', data: PNG_BASE64, mimeType: 'image/png' }],
  }),
  simple('test_audio_content', 'Returns audio content.', {
    content: [{ type: 'audio', data: WAV_BASE64, mimeType: 'audio/wav' }],
  }),
  simple('test_embedded_resource', 'Returns an embedded resource.', {
    content: [
      {
        type: 'resource',
        resource: {
          uri: 'test://embedded-resource',
          mimeType: 'text/plain',
          text: 'This is an embedded resource content.',
        },
      },
    ],
  }),
  simple('test_multiple_content_types', 'Returns text, image and resource content together.', {
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG_BASE64, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: {
          uri: 'test://mixed-content-resource',
          mimeType: 'application/json',
          text: JSON.stringify({ test: 'data', value: 123 }),
        },
      },
    ],
  }),
  simple('test_error_handling', 'Always fails, as a tool error.', {
    ...text('This tool intentionally returns an error for testing'),
    isError: true,
  }),
  {
    // Three info messages as the suite asks, plus a debug one so a test can see logging/setLevel filter.
    tool: { name: 'test_tool_with_logging', description: 'Sends log messages while it runs.', inputSchema: NO_ARGS },
    run: async (_args, extra, session) => {
      await log(session, extra, 'debug', 'Tool debug detail');
      await log(session, extra, 'info', 'Tool execution started');
      await sleep(50);
      await log(session, extra, 'info', 'Tool processing data');
      await sleep(50);
      await log(session, extra, 'info', 'Tool execution completed');
      return text('Tool with logging executed successfully');
    },
  },
  {
    tool: { name: 'test_tool_with_progress', description: 'Reports progress 0, 50, 100 of 100.', inputSchema: NO_ARGS },
    run: async (_args, extra) => {
      const progressToken = extra._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress, total: 100, message: `Completed ${progress} of 100` },
          });
        }
        if (progress < 100) await sleep(50);
      }
      return text(
        `Progress reported${progressToken === undefined ? ' (no token given)' : ` for token ${String(progressToken)}`}`,
      );
    },
  },
  {
    tool: {
      name: 'test_sampling',
      description: 'Asks the client to sample an LLM completion.',
      inputSchema: {
        type: 'object',
        properties: { prompt: { type: 'string', description: 'The prompt to send to the LLM' } },
        required: ['prompt'],
      },
    },
    run: async (args, extra, session) => {
      if (!session.server.getClientCapabilities()?.sampling)
        return { ...text('Client does not support sampling'), isError: true };
      const result = await extra.sendRequest(
        {
          method: 'sampling/createMessage',
          params: {
            messages: [{ role: 'user', content: { type: 'text', text: String(args.prompt) } }],
            maxTokens: 100,
          },
        },
        CreateMessageResultSchema,
      );
      return text(`LLM response: ${result.content.type === 'text' ? result.content.text : `[${result.content.type}]`}`);
    },
  },
  {
    tool: {
      name: 'test_elicitation',
      description: 'Asks the user for a username and email.',
      inputSchema: {
        type: 'object',
        properties: { message: { type: 'string', description: 'The message to show the user' } },
        required: ['message'],
      },
    },
    run: (args, extra, session) =>
      elicit(
        session,
        extra,
        {
          message: String(args.message),
          requestedSchema: {
            type: 'object',
            properties: {
              username: { type: 'string', description: "User's response" },
              email: { type: 'string', description: "User's email address" },
            },
            required: ['username', 'email'],
          },
        },
        'User response',
      ),
  },
  {
    tool: {
      name: 'test_elicitation_sep1034_defaults',
      description: 'Elicits a form whose fields all carry defaults (SEP-1034).',
      inputSchema: NO_ARGS,
    },
    run: (_args, extra, session) =>
      elicit(
        session,
        extra,
        { message: 'Please review and update the form fields with defaults', requestedSchema: SEP1034_SCHEMA },
        'Elicitation completed',
      ),
  },
  {
    tool: {
      name: 'test_elicitation_sep1330_enums',
      description: 'Elicits a form with every enum variant (SEP-1330).',
      inputSchema: NO_ARGS,
    },
    run: (_args, extra, session) =>
      elicit(
        session,
        extra,
        { message: 'Please select options from the enum fields', requestedSchema: SEP1330_SCHEMA },
        'Elicitation completed',
      ),
  },
  {
    tool: {
      name: 'json_schema_2020_12_tool',
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: JSON_SCHEMA_2020_12 as unknown as Tool['inputSchema'],
    },
    run: async (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
  },
  {
    // SEP-1699: drop the POST stream mid-call; the result then arrives on the client's Last-Event-ID reconnect.
    tool: {
      name: 'test_reconnection',
      description: 'Closes its SSE stream mid-call and answers after the client reconnects.',
      inputSchema: NO_ARGS,
    },
    run: async (_args, extra) => {
      extra.closeSSEStream?.();
      await sleep(100);
      return text('Reconnection test completed successfully.');
    },
  },
];

const TOOLS_BY_NAME = new Map(TOOLS.map((t) => [t.tool.name, t]));

// ---------- resources ----------

const RESOURCES: Resource[] = [
  { uri: 'test://static-text', name: 'static-text', description: 'A static text resource.', mimeType: 'text/plain' },
  {
    uri: 'test://static-binary',
    name: 'static-binary',
    description: 'A static binary resource (a PNG).',
    mimeType: 'image/png',
  },
  {
    uri: WATCHED_URI,
    name: 'watched-resource',
    description: 'Changes while subscribed, with notifications/resources/updated.',
    mimeType: 'text/plain',
  },
];

function readResource(uri: string, session: Session): ReadResourceResult {
  if (uri === 'test://static-text')
    return { contents: [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }] };
  if (uri === 'test://static-binary') return { contents: [{ uri, mimeType: 'image/png', blob: PNG_BASE64 }] };
  if (uri === WATCHED_URI)
    return {
      contents: [
        { uri, mimeType: 'text/plain', text: `Watched resource content, revision ${session.watchedRevision}` },
      ],
    };
  const id = /^test:\/\/template\/([^/]+)\/data$/.exec(uri)?.[1];
  if (id !== undefined) {
    return {
      contents: [
        {
          uri,
          mimeType: 'application/json',
          text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
        },
      ],
    };
  }
  // SEP-2164: an unknown resource is an Invalid Params error naming the URI, never empty contents.
  throw new McpError(ErrorCode.InvalidParams, 'Resource not found', { uri });
}

/** While subscribed, the watched resource changes on a timer and the session is told so (standalone GET stream). */
function subscribe(session: Session, uri: string, intervalMs: number): void {
  if (uri !== WATCHED_URI || session.watchTimer) return;
  session.watchTimer = setInterval(() => {
    session.watchedRevision += 1;
    session.server.sendResourceUpdated({ uri: WATCHED_URI }).catch(() => undefined);
  }, intervalMs);
  session.watchTimer.unref();
}

function unsubscribe(session: Session, uri: string): void {
  if (uri !== WATCHED_URI) return;
  clearInterval(session.watchTimer);
  session.watchTimer = undefined;
}

// ---------- prompts ----------

interface PromptDef {
  prompt: Prompt;
  get(args: Record<string, string>): GetPromptResult;
}

const PROMPTS: PromptDef[] = [
  {
    prompt: { name: 'test_simple_prompt', description: 'A prompt without arguments.' },
    get: () => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
    }),
  },
  {
    prompt: {
      name: 'test_prompt_with_arguments',
      description: 'A prompt with two required arguments.',
      arguments: [
        { name: 'arg1', description: 'First test argument', required: true },
        { name: 'arg2', description: 'Second test argument', required: true },
      ],
    },
    get: (a) => ({
      messages: [
        { role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'` } },
      ],
    }),
  },
  {
    prompt: {
      name: 'test_prompt_with_embedded_resource',
      description: 'A prompt embedding a resource.',
      arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
    },
    get: (a) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: {
              uri: String(a.resourceUri),
              mimeType: 'text/plain',
              text: 'Embedded resource content for testing.',
            },
          },
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  },
  {
    prompt: { name: 'test_prompt_with_image', description: 'A prompt with image content.' },
    get: () => ({
      messages: [
        { role: 'user', content: { type: 'image', data: PNG_BASE64, mimeType: 'image/png' } },
        { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
      ],
    }),
  },
];

const PROMPTS_BY_NAME = new Map(PROMPTS.map((p) => [p.prompt.name, p]));

function getPrompt(name: string, args: Record<string, string>): GetPromptResult {
  const def = PROMPTS_BY_NAME.get(name);
  if (!def) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${name}`);
  const missing = (def.prompt.arguments ?? [])
    .filter((a) => a.required && args[a.name] === undefined)
    .map((a) => a.name);
  if (missing.length > 0)
    throw new McpError(ErrorCode.InvalidParams, `Missing required arguments: ${missing.join(', ')}`);
  return def.get(args);
}

// ---------- completion ----------

/** Candidates per `ref` + argument name; completion filters them by the typed prefix. */
const COMPLETIONS: Record<string, string[]> = {
  'ref/prompt test_prompt_with_arguments arg1': ['paris', 'park', 'party', 'test-value'],
  'ref/prompt test_prompt_with_arguments arg2': ['hello', 'help', 'world'],
  'ref/prompt test_prompt_with_embedded_resource resourceUri': RESOURCES.map((r) => r.uri),
  [`ref/resource ${TEMPLATE_URI} id`]: ['1', '2', '3', '123'],
};

function complete(ref: { type: string; name?: string; uri?: string }, argument: { name: string; value: string }) {
  const candidates = COMPLETIONS[`${ref.type} ${ref.name ?? ref.uri} ${argument.name}`] ?? [];
  const values = candidates.filter((v) => v.startsWith(argument.value));
  return { completion: { values, total: values.length, hasMore: false } };
}

// ---------- one session ----------

function createSession(
  allowedHosts: string[],
  options: Required<ConformanceUpstreamOptions>,
  onInit: (id: string, s: Session) => void,
): Session {
  const server = new Server(
    { name: 'conformance-upstream', version: '1.0.0' },
    { capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {} } },
  );
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    eventStore: createEventStore(),
    retryInterval: 1000,
    // dns-rebinding-protection: only our own Host is acceptable (Origin is checked only when sent).
    enableDnsRebindingProtection: true,
    allowedHosts,
    allowedOrigins: allowedHosts.map((h) => `http://${h}`),
    onsessioninitialized: (id) => onInit(id, session),
  });
  const session: Session = { server, transport, watchedRevision: 0 };
  registerHandlers(session, options);
  return session;
}

function registerHandlers(session: Session, options: Required<ConformanceUpstreamOptions>): void {
  const { server } = session;
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS.map((t) => t.tool) }));
  server.setRequestHandler(CallToolRequestSchema, async (r, extra) => {
    const def = TOOLS_BY_NAME.get(r.params.name);
    if (!def) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${r.params.name}`);
    return def.run((r.params.arguments ?? {}) as Args, extra, session);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      { uriTemplate: TEMPLATE_URI, name: 'template', description: 'Data for an id.', mimeType: 'application/json' },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (r) => readResource(r.params.uri, session));
  server.setRequestHandler(
    SubscribeRequestSchema,
    async (r) => (subscribe(session, r.params.uri, options.watchIntervalMs), {}),
  );
  server.setRequestHandler(UnsubscribeRequestSchema, async (r) => (unsubscribe(session, r.params.uri), {}));
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS.map((p) => p.prompt) }));
  server.setRequestHandler(GetPromptRequestSchema, async (r) => getPrompt(r.params.name, r.params.arguments ?? {}));
  server.setRequestHandler(CompleteRequestSchema, async (r) => complete(r.params.ref, r.params.argument));
  // Replaces the SDK's own setLevel handler: the level must be readable here, since tools log through
  // extra.sendNotification (on their request's stream), which the SDK does not filter.
  server.setRequestHandler(SetLevelRequestSchema, async (r) => {
    session.logLevel = r.params.level;
    return {};
  });
}

// ---------- protocol 2026-07-28 ----------

/** requestState comes back from the client: sealed when minted, checked (-32602 if tampered) before a handler runs. */
const requestStateCodec = createRequestStateCodec<Record<string, unknown>>({
  key: crypto.getRandomValues(new Uint8Array(32)),
});
const NAME_SCHEMA = {
  type: 'object' as const,
  properties: { name: { type: 'string' as const } },
  required: ['name'],
};
const CONFIRM_SCHEMA = {
  type: 'object' as const,
  properties: { ok: { type: 'boolean' as const } },
  required: ['ok'],
};
type ModernResult = CallToolResult | ReturnType<typeof inputRequired>;
type ModernTool = { tool: Tool; run(ctx: ServerContext, bus: McpHttpHandler, args: Args): Promise<ModernResult> };

const nonce = () => randomUUID();
const MODERN_TOOLS: ModernTool[] = [
  {
    // SEP-2243: an argument mirrored into a Mcp-Param-Region header, which the server checks against the body.
    tool: {
      name: 'test_x_mcp_header',
      description: 'Mirrors region into the Mcp-Param-Region header.',
      inputSchema: {
        type: 'object',
        properties: {
          region: { type: 'string', description: 'mirrored into Mcp-Param-Region', 'x-mcp-header': 'Region' },
          level: { type: 'integer', description: 'non-mirrored argument' },
        },
      } as Tool['inputSchema'],
    },
    run: async (_ctx, _handler, args) => text(`region=${typeof args.region === 'string' ? args.region : '<none>'}`),
  },
  {
    // SEP-2575: needs sampling; a caller that declared none is refused with -32021 (HTTP 400).
    tool: { name: 'test_missing_capability', description: 'Needs the sampling capability.', inputSchema: NO_ARGS },
    run: async (ctx) =>
      ctx.mcpReq.inputResponses?.['llm_answer'] === undefined
        ? inputRequired({
            inputRequests: {
              llm_answer: inputRequired.createMessage({
                messages: [{ role: 'user', content: { type: 'text', text: 'Reply with the single word: pong' } }],
                maxTokens: 16,
              }),
            },
          })
        : text('sampling round-trip complete'),
  },
  {
    tool: { name: 'test_streaming_elicitation', description: 'A plain answer on the stream.', inputSchema: NO_ARGS },
    run: async () => text('stream observed: result frames only, no top-level requests'),
  },
  {
    tool: {
      name: 'test_logging_tool',
      description: 'Logs only when the request asks for a level.',
      inputSchema: NO_ARGS,
    },
    run: async (ctx) => {
      await ctx.mcpReq.log('info', 'test_logging_tool ran');
      return text('logged through the request-scoped, logLevel-gated channel');
    },
  },
  {
    tool: { name: 'test_trigger_tool_change', description: 'Announces a tools/list change.', inputSchema: NO_ARGS },
    run: async (_ctx, handler) => {
      handler.notify.toolsChanged();
      return text('tools_list_changed published');
    },
  },
  {
    tool: { name: 'test_trigger_prompt_change', description: 'Announces a prompts/list change.', inputSchema: NO_ARGS },
    run: async (_ctx, handler) => {
      handler.notify.promptsChanged();
      return text('prompts_list_changed published');
    },
  },
  {
    tool: { name: 'test_input_required_result_elicitation', description: 'Asks for a name.', inputSchema: NO_ARGS },
    run: async (ctx) => {
      const name = acceptedContent<{ name: string }>(ctx.mcpReq.inputResponses, 'user_name')?.name;
      if (typeof name === 'string') return text(`Hello, ${name}!`);
      return inputRequired({
        inputRequests: {
          user_name: inputRequired.elicit({ message: 'What is your name?', requestedSchema: NAME_SCHEMA }),
        },
      });
    },
  },
  {
    tool: { name: 'test_input_required_result_sampling', description: 'Asks for a completion.', inputSchema: NO_ARGS },
    run: async (ctx) => {
      const answer = ctx.mcpReq.inputResponses?.['capital_question'] as { content?: { text?: string } } | undefined;
      if (answer !== undefined) return text(`Sampling response: ${answer.content?.text ?? JSON.stringify(answer)}`);
      return inputRequired({
        inputRequests: {
          capital_question: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
            maxTokens: 100,
          }),
        },
      });
    },
  },
  {
    tool: { name: 'test_input_required_result_list_roots', description: 'Asks for the roots.', inputSchema: NO_ARGS },
    run: async (ctx) => {
      const answer = ctx.mcpReq.inputResponses?.['client_roots'] as { roots?: Array<{ uri?: string }> } | undefined;
      if (Array.isArray(answer?.roots))
        return text(`Client exposed ${answer.roots.length} root(s): ${answer.roots.map((r) => r.uri).join(', ')}`);
      return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
    },
  },
  {
    tool: {
      name: 'test_input_required_result_request_state',
      description: 'Round-trips requestState.',
      inputSchema: NO_ARGS,
    },
    run: async (ctx) => {
      if (acceptedContent<{ ok: boolean }>(ctx.mcpReq.inputResponses, 'confirm') === undefined)
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({ message: 'Please confirm', requestedSchema: CONFIRM_SCHEMA }),
          },
          requestState: await requestStateCodec.mint({ tool: 'request_state', nonce: nonce() }),
        });
      if (ctx.mcpReq.requestState() === undefined)
        throw new ProtocolError(-32602, 'Invalid requestState: missing or failed integrity verification');
      return text('state-ok: requestState verified and confirmation received');
    },
  },
  {
    tool: {
      name: 'test_input_required_result_multiple_inputs',
      description: 'Asks three things at once.',
      inputSchema: NO_ARGS,
    },
    run: async (ctx) => {
      const r = ctx.mcpReq.inputResponses;
      const name = acceptedContent<{ name: string }>(r, 'user_name')?.name;
      const greeting = (r?.['greeting'] as { content?: { text?: string } } | undefined)?.content?.text;
      const roots = (r?.['client_roots'] as { roots?: unknown[] } | undefined)?.roots;
      if (typeof name === 'string' && typeof greeting === 'string' && Array.isArray(roots))
        return text(`${greeting} ${name} — ${roots.length} root(s) visible`);
      return inputRequired({
        inputRequests: {
          user_name: inputRequired.elicit({ message: 'What is your name?', requestedSchema: NAME_SCHEMA }),
          greeting: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
            maxTokens: 50,
          }),
          client_roots: inputRequired.listRoots(),
        },
        requestState: await requestStateCodec.mint({ tool: 'multiple_inputs', nonce: nonce() }),
      });
    },
  },
  {
    tool: {
      name: 'test_input_required_result_multi_round',
      description: 'Two rounds of questions.',
      inputSchema: NO_ARGS,
    },
    run: async (ctx) => {
      const state = ctx.mcpReq.requestState<Record<string, unknown>>();
      const round = state?.tool === 'multi_round' && typeof state.round === 'number' ? state.round : 0;
      if (round === 0)
        return inputRequired({
          inputRequests: {
            step1: inputRequired.elicit({ message: 'Step 1: What is your name?', requestedSchema: NAME_SCHEMA }),
          },
          requestState: await requestStateCodec.mint({ tool: 'multi_round', round: 1, nonce: nonce() }),
        });
      if (round === 1) {
        const name = acceptedContent<{ name: string }>(ctx.mcpReq.inputResponses, 'step1')?.name ?? 'unknown';
        return inputRequired({
          inputRequests: {
            step2: inputRequired.elicit({
              message: 'Step 2: What is your favorite color?',
              requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
            }),
          },
          requestState: await requestStateCodec.mint({ tool: 'multi_round', round: 2, name, nonce: nonce() }),
        });
      }
      const color = acceptedContent<{ color: string }>(ctx.mcpReq.inputResponses, 'step2')?.color ?? 'unknown';
      return text(`Multi-round complete: ${String(state?.name ?? 'unknown')} likes ${color}`);
    },
  },
  {
    tool: {
      name: 'test_input_required_result_tampered_state',
      description: 'Refuses tampered state.',
      inputSchema: NO_ARGS,
    },
    run: async (ctx) => {
      if (
        ctx.mcpReq.requestState() !== undefined &&
        acceptedContent(ctx.mcpReq.inputResponses, 'confirm') !== undefined
      )
        return text('integrity-ok: requestState verified');
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({ message: 'Please confirm', requestedSchema: CONFIRM_SCHEMA }),
        },
        requestState: await requestStateCodec.mint({ tool: 'tampered_state', nonce: nonce() }),
      });
    },
  },
  {
    tool: {
      name: 'test_input_required_result_capabilities',
      description: 'Asks only what the client can answer.',
      inputSchema: NO_ARGS,
    },
    run: async (ctx) => {
      if (ctx.mcpReq.inputResponses !== undefined) return text('Capability-aware input requests fulfilled');
      const declared = ((ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] ??
        {}) as Record<string, unknown>;
      const inputRequests: InputRequests = {};
      if (declared.elicitation !== undefined)
        inputRequests.user_name = inputRequired.elicit({ message: 'What is your name?', requestedSchema: NAME_SCHEMA });
      if (declared.sampling !== undefined)
        inputRequests.greeting = inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Generate a short greeting' } }],
          maxTokens: 50,
        });
      if (declared.roots !== undefined) inputRequests.client_roots = inputRequired.listRoots();
      if (Object.keys(inputRequests).length === 0)
        return text('No declared client capability supports an in-band input request');
      return inputRequired({ inputRequests });
    },
  },
];
const MODERN_TOOLS_BY_NAME = new Map(MODERN_TOOLS.map((t) => [t.tool.name, t]));
const INPUT_PROMPT: Prompt = {
  name: 'test_input_required_result_prompt',
  description: 'Needs elicitation input before rendering.',
};

/** A 2025 tool run on a 2026-07-28 request: what it sends rides the request's own stream. */
function legacyExtra(ctx: ServerContext, meta: Record<string, unknown> | undefined): Extra {
  return {
    signal: ctx.mcpReq.signal,
    _meta: meta,
    sendNotification: (n: { method: string; params?: Record<string, unknown> }) => ctx.mcpReq.notify(n as never),
    sendRequest: (r: { method: string; params?: Record<string, unknown> }) => ctx.mcpReq.send(r as never),
  } as unknown as Extra;
}

/** One 2026-07-28 request's server: the 2025 tools, resources and prompts, and the 2026 fixtures. */
function modernServer(handler: () => McpHttpHandler): ModernServer {
  const server = new ModernServer(
    { name: 'conformance-upstream', version: '1.0.0' },
    {
      capabilities: { tools: { listChanged: true }, resources: {}, prompts: { listChanged: true }, completions: {} },
      requestState: { verify: requestStateCodec.verify },
    },
  );
  const pseudo = (ctx: ServerContext): Session =>
    ({
      server: {
        getClientCapabilities: () =>
          (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] ?? {},
      },
      watchedRevision: 0,
    }) as unknown as Session;
  server.setRequestHandler('tools/list', async () => ({
    tools: [...TOOLS.map((t) => t.tool), ...MODERN_TOOLS.map((t) => t.tool)] as never,
  }));
  server.setRequestHandler('tools/call', async (r, ctx) => {
    const modern = MODERN_TOOLS_BY_NAME.get(r.params.name);
    if (modern) return (await modern.run(ctx, handler(), (r.params.arguments ?? {}) as Args)) as never;
    const def = TOOLS_BY_NAME.get(r.params.name);
    if (!def) throw new ProtocolError(-32602, `Unknown tool: ${r.params.name}`);
    return (await def.run((r.params.arguments ?? {}) as Args, legacyExtra(ctx, r.params._meta), pseudo(ctx))) as never;
  });
  server.setRequestHandler('resources/list', async () => ({ resources: RESOURCES as never }));
  server.setRequestHandler('resources/templates/list', async () => ({
    resourceTemplates: [
      { uriTemplate: TEMPLATE_URI, name: 'template', description: 'Data for an id.', mimeType: 'application/json' },
    ],
  }));
  server.setRequestHandler('resources/read', async (r, ctx) => {
    try {
      return readResource(r.params.uri, pseudo(ctx)) as never;
    } catch (err) {
      if (err instanceof McpError) throw new ProtocolError(err.code, 'Resource not found', err.data);
      throw err;
    }
  });
  server.setRequestHandler('prompts/list', async () => ({
    prompts: [...PROMPTS.map((p) => p.prompt), INPUT_PROMPT] as never,
  }));
  server.setRequestHandler('prompts/get', async (r, ctx) => {
    if (r.params.name === INPUT_PROMPT.name) {
      const context = acceptedContent<{ context: string }>(ctx.mcpReq.inputResponses, 'user_context')?.context;
      if (typeof context === 'string')
        return {
          messages: [{ role: 'user', content: { type: 'text', text: `Use the following context: ${context}` } }],
        };
      return inputRequired({
        inputRequests: {
          user_context: inputRequired.elicit({
            message: 'What context should the prompt use?',
            requestedSchema: { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] },
          }),
        },
      }) as never;
    }
    try {
      return getPrompt(r.params.name, (r.params.arguments ?? {}) as Record<string, string>) as never;
    } catch (err) {
      if (err instanceof McpError) throw new ProtocolError(err.code, err.message.replace(/^MCP error -?\d+: /, ''));
      throw err;
    }
  });
  server.setRequestHandler('completion/complete', async (r) => complete(r.params.ref, r.params.argument) as never);
  return server;
}

// ---------- HTTP ----------

function sendRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** The parsed body, undefined when empty; throws on malformed JSON. */
async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
}

export async function startConformanceUpstream(options: ConformanceUpstreamOptions = {}): Promise<ConformanceUpstream> {
  const opts = { watchIntervalMs: options.watchIntervalMs ?? 1000 };
  const sessions = new Map<string, Session>();
  const methods: string[] = [];
  let allowedHosts: string[] = [];
  const modern: McpHttpHandler = createMcpHandler(() => modernServer(() => modern), { legacy: 'reject' });

  const onInit = (id: string, session: Session) => {
    sessions.set(id, session);
    // Fires when the transport closes (DELETE, or our close()): the session is gone for good, so later requests get 404.
    session.server.onclose = () => {
      sessions.delete(id);
      clearInterval(session.watchTimer);
    };
  };

  async function openSession(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const session = createSession(allowedHosts, opts, onInit);
    await session.server.connect(session.transport);
    await session.transport.handleRequest(req, res, body);
    // A rejected initialize (bad Host, bad version) never got a session id: nothing will ever reach it.
    if (session.transport.sessionId === undefined) await session.server.close();
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/mcp')
      return sendRpcError(res, 404, -32000, 'Not found');
    let body: unknown;
    try {
      body = req.method === 'POST' ? await readJson(req) : undefined;
    } catch {
      return sendRpcError(res, 400, -32700, 'Parse error');
    }
    if (body && typeof (body as { method?: unknown }).method === 'string')
      methods.push((body as { method: string }).method);
    if (req.method === 'POST' && isModernRequest(req.method, req.headers, body)) {
      if (!allowedHosts.includes(String(req.headers.host))) return sendRpcError(res, 403, -32000, 'Forbidden host');
      return answerWith((r) => modern.fetch(r, { parsedBody: body }), req, res, `http://${req.headers.host}/mcp`);
    }
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      // Unknown or terminated sessions are 404, which tells a client to initialize again.
      if (!session) return sendRpcError(res, 404, -32001, 'Session not found');
      return session.transport.handleRequest(req, res, body);
    }
    if (req.method === 'POST' && isInitializeRequest(body)) return openSession(req, res, body);
    return sendRpcError(res, 400, -32000, 'Bad Request: no valid session ID');
  }

  const http = createServer((req, res) => {
    route(req, res).catch(() => {
      if (!res.headersSent) sendRpcError(res, 500, -32603, 'Internal error');
      else res.end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`];

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    methods,
    close: async () => {
      await modern.close();
      await Promise.all([...sessions.values()].map((s) => s.server.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

// Run directly (`node --import=tsx test/helpers/conformance-upstream.ts`) to point the suite at it by hand.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const upstream = await startConformanceUpstream();
  console.log(upstream.url);
  const stop = () => void upstream.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
