import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { listenLoopback } from './loopback-http.js';

/**
 * A stateful upstream MCP server for the proxy's tests: its state is per MCP session, as a
 * browser automation server's page is. `remember` keeps a value in the session, `recall` says it
 * back (or `nothing`); `wait` answers only when cancelled (it notes the cancellation), or, given `ms`, after that long. It counts
 * the sessions opened (`initialize`) and ended (`DELETE`), and every HTTP request it receives
 * (`requests`: the HTTP method and the JSON-RPC method), so a test can count what a proxied call
 * costs it.
 */
export interface StatefulUpstream {
  url: string;
  /** Sessions opened (initialize answered) and ended (DELETE answered). */
  readonly opened: number;
  readonly deleted: number;
  /** Sessions open now. */
  readonly open: number;
  /** Every HTTP request: its method, the JSON-RPC method, the session id it carried. */
  requests: Array<{ http: string; method?: string; session?: string }>;
  /** Calls of `wait` that were cancelled (notifications/cancelled received for them). */
  readonly cancelled: number;
  close(): Promise<void>;
}

export async function startStatefulUpstream(): Promise<StatefulUpstream> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const counts = { opened: 0, deleted: 0, cancelled: 0 };
  const requests: StatefulUpstream['requests'] = [];

  const sessionServer = () => {
    let value: string | undefined;
    const server = new Server({ name: 'stateful-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        {
          name: 'remember',
          description: 'Keeps a value in this session.',
          inputSchema: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] },
        },
        { name: 'recall', description: 'Says the value this session keeps.', inputSchema: { type: 'object' } },
        { name: 'wait', description: 'Answers only when cancelled.', inputSchema: { type: 'object' } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (r, extra) => {
      if (r.params.name === 'remember') {
        value = String((r.params.arguments ?? {}).value);
        return { content: [{ type: 'text', text: 'kept' }] };
      }
      if (r.params.name === 'wait')
        return new Promise((resolve) => {
          const ms = (r.params.arguments ?? {}).ms;
          if (typeof ms === 'number') setTimeout(() => resolve({ content: [{ type: 'text', text: 'waited' }] }), ms);
          extra.signal.addEventListener('abort', () => {
            counts.cancelled += 1;
            resolve({ content: [{ type: 'text', text: 'cancelled' }] });
          });
        });
      return { content: [{ type: 'text', text: value ?? 'nothing' }] };
    });
    return server;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const sid = req.headers['mcp-session-id'];
    requests.push({
      http: req.method ?? '',
      ...(typeof body?.method === 'string' ? { method: body.method } : {}),
      ...(typeof sid === 'string' ? { session: sid } : {}),
    });
    let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
    if (!transport) {
      if (body?.method !== 'initialize') {
        res
          .writeHead(typeof sid === 'string' ? 404 : 400, { 'content-type': 'application/json' })
          .end(
            JSON.stringify({ jsonrpc: '2.0', id: body?.id ?? null, error: { code: -32000, message: 'No session' } }),
          );
        return;
      }
      const made: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => {
          counts.opened += 1;
          transports.set(id, made);
        },
        onsessionclosed: (id) => {
          counts.deleted += 1;
          transports.delete(id);
        },
      });
      await sessionServer().connect(made);
      transport = made;
    }
    await transport.handleRequest(req, res, body);
  };
  const http = await listenLoopback((req, res) => void handle(req, res));
  return {
    url: http.url,
    get opened() {
      return counts.opened;
    },
    get deleted() {
      return counts.deleted;
    },
    get open() {
      return transports.size;
    },
    get cancelled() {
      return counts.cancelled;
    },
    requests,
    close: async () => {
      await Promise.all([...transports.values()].map((t) => t.close().catch(() => {})));
      await http.close();
    },
  };
}
