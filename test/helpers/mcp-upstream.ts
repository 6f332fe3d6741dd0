import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMcpHandler, ProtocolError, Server as ModernServer } from '@modelcontextprotocol/server';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { answerWith, isModernRequest } from '../../src/mcp/modern.js';

/**
 * An upstream MCP server for the proxy's tests: outside the product, so a real HTTP server on
 * 127.0.0.1 built with the SDK. Tools `echo` and `add` (and `secret_tool`, to test allow-lists);
 * it requires `Authorization: Bearer <secret>` when given one (or any of `secrets`), keeps the
 * Authorization header of every HTTP request it receives (`authorizations`), and counts the tool calls it runs.
 * With `faults`, two more tools: `hold` answers only once `release()` is called, and `hang_up`
 * closes the connection without an answer (a transport failure, as a crashed upstream gives).
 * One prompt, `greet`. `change()` rewrites a tool's description or schema from then on (a "rug
 * pull"); `reply` stands in for a tool's answer; `requests` keeps each request received (its JSON-RPC method, else `HTTP <method>`) with the `traceparent` it came with.
 * With `modern`, it serves protocol 2026-07-28 too on the same endpoint (requests carrying the
 * per-request envelope, through the official v2 SDK's per-request handler): tools `echo`, `add`
 * and `secret_tool`, the same answers, the calls counted alike. Without it, such requests are
 * answered as the v1 SDK answers them (a 2025-only upstream).
 */
export interface McpUpstream {
  url: string;
  calls: Array<{ name: string; args: unknown }>;
  requests: Array<{ method: string; traceparent: string | undefined }>;
  /** The Authorization header of each HTTP request received, refused ones included (undefined: none). */
  authorizations: Array<string | undefined>;
  /** From now on the tool `name` lists with these fields changed (description, schemas, annotations). */
  change(name: string, fields: Record<string, unknown>): void;
  /** When set, the answer of a 2025 tool call it returns (undefined: the tool's own answer). */
  reply?: ((name: string, args: Record<string, unknown>) => Record<string, unknown> | undefined) | undefined;
  /** While true, every request is answered 503 (an upstream that is down). */
  down: boolean;
  /** Answers every `hold` call waiting, and those to come. */
  release(): void;
  close(): Promise<void>;
}

const TOOLS = [
  {
    name: 'echo',
    description: 'Says the text back.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
  {
    name: 'add',
    description: 'Adds two numbers.',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  },
  { name: 'secret_tool', description: 'Not for everyone.', inputSchema: { type: 'object', properties: {} } },
  {
    name: 'slow',
    description: 'Reports progress three times and logs, then answers.',
    inputSchema: { type: 'object', properties: {} },
  },
];

const FAULT_TOOLS = [
  { name: 'hold', description: 'Answers once the test releases it.', inputSchema: { type: 'object', properties: {} } },
  {
    name: 'hang_up',
    description: 'Closes the connection unanswered.',
    inputSchema: { type: 'object', properties: {} },
  },
];

/** The answer of `echo`, `add` or `secret_tool` to these arguments: the same in both eras. */
function answer(name: string, args: Record<string, unknown>) {
  if (name === 'echo') return { content: [{ type: 'text' as const, text: String(args.text) }] };
  if (name === 'add') return { content: [{ type: 'text' as const, text: String(Number(args.a) + Number(args.b)) }] };
  return { content: [{ type: 'text' as const, text: 'the secret' }] };
}

export async function startMcpUpstream(
  options: { secret?: string; secrets?: string[]; faults?: boolean; modern?: boolean } = {},
): Promise<McpUpstream> {
  const calls: McpUpstream['calls'] = [];
  const requests: McpUpstream['requests'] = [];
  const authorizations: McpUpstream['authorizations'] = [];
  const accepted = [...(options.secret ? [options.secret] : []), ...(options.secrets ?? [])].map((x) => `Bearer ${x}`);
  const state = { down: false };
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tools: Array<Record<string, unknown> & { name: string }> = (
    options.faults ? [...TOOLS, ...FAULT_TOOLS] : TOOLS
  ).map((x) => ({ ...x }));
  /** One 2026-07-28 request's server (a fresh one per request, as the SDK's handler asks). */
  const modernServer = () => {
    const server = new ModernServer({ name: 'fixture-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
    const offered = () => tools.filter((x) => ['echo', 'add', 'secret_tool'].includes(x.name));
    server.setRequestHandler('tools/list', async () => ({ tools: offered() as never }));
    server.setRequestHandler('tools/call', async (r) => {
      if (!offered().some((x) => x.name === r.params.name))
        throw new ProtocolError(-32602, `Unknown tool: ${r.params.name}`);
      calls.push({ name: r.params.name, args: r.params.arguments });
      return answer(r.params.name, (r.params.arguments ?? {}) as Record<string, unknown>);
    });
    return server;
  };
  const modern = options.modern ? createMcpHandler(modernServer, { legacy: 'reject' }) : undefined;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (state.down) {
      res.writeHead(503).end();
      return;
    }
    authorizations.push(req.headers.authorization);
    if (accepted.length > 0 && !accepted.includes(req.headers.authorization ?? '')) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    // Every HTTP request is kept: a JSON-RPC request or notification by its method, anything else
    // (a GET for the event stream, a DELETE ending a session, a client's answer) by its HTTP method.
    const traceparent = typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined;
    requests.push({ method: typeof body?.method === 'string' ? body.method : `HTTP ${req.method}`, traceparent });
    if (modern && req.method === 'POST' && isModernRequest(req.method, req.headers, body)) {
      await answerWith((r) => modern.fetch(r, { parsedBody: body }), req, res, `http://${req.headers.host}/mcp`);
      return;
    }
    if (options.faults && body?.method === 'tools/call' && body.params?.name === 'hang_up') {
      calls.push({ name: 'hang_up', args: body.params.arguments });
      req.socket.destroy();
      return;
    }
    const server = new Server(
      { name: 'fixture-upstream', version: '1.0.0' },
      { capabilities: { tools: {}, logging: {}, prompts: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools as never }));
    server.setRequestHandler(ListPromptsRequestSchema, async () => ({
      prompts: [{ name: 'greet', description: 'A greeting.' }],
    }));
    server.setRequestHandler(GetPromptRequestSchema, async () => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'Hello!' } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (r, extra) => {
      calls.push({ name: r.params.name, args: r.params.arguments });
      if (r.params.name === 'slow') {
        const token = r.params._meta?.progressToken;
        await extra.sendNotification({
          method: 'notifications/message',
          params: { level: 'info', logger: 'fixture', data: 'working' },
        } as never);
        for (let i = 1; i <= 3; i += 1) {
          if (token !== undefined)
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: i, total: 3, message: `step ${i}` },
            } as never);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        return { content: [{ type: 'text', text: 'done' }] };
      }
      if (r.params.name === 'hold') {
        await released;
        return { content: [{ type: 'text', text: 'held' }] };
      }
      const args = (r.params.arguments ?? {}) as Record<string, unknown>;
      return (fixture.reply?.(r.params.name, args) as never) ?? answer(r.params.name, args);
    });
    // The slow tool streams its notifications; everything else answers JSON.
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: body?.params?.name !== 'slow',
    });
    await server.connect(transport as never);
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await transport.handleRequest(req, res, body);
  };
  const http: HttpServer = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const fixture: McpUpstream = {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    requests,
    authorizations,
    get down() {
      return state.down;
    },
    set down(value: boolean) {
      state.down = value;
    },
    change(name, fields) {
      const tool = tools.find((x) => x.name === name);
      if (!tool) throw new Error(`no tool ${name}`);
      Object.assign(tool, fields);
    },
    release,
    close: async () => {
      await modern?.close();
      await new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      });
    },
  };
  return fixture;
}
