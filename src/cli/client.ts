import type { AgentView } from '../agents/index.js';
import type { ApprovalView } from '../approvals/service.js';
import type { DrillReport } from '../drills/service.js';
import type { KeyView, MintKeyInput } from '../keys/index.js';
import type { McpServerAdded, McpServerInput, McpServerTest, McpServerView, McpToolList } from './mcp.js';
import type { PinView } from '../mcp/pins.js';
import type { FreezeAnswer, PendingFreeze, Selector, StopAllState } from '../killswitch/index.js';
import { verdictOnline, type ReceiptVerdict } from '../receipts/verdict.js';
import { callServer, RemoteError } from './http-client.js';
import type { Bearer } from './remote.js';

/**
 * The typed client of a running server that the commands use: one method per route a command
 * calls, each returning the type the domain exports for that answer. It knows the routes, not
 * the rules: those stay in the server. The credential is a service token (`SVC_TOKEN`) or a
 * person's sign-in (svc login, remote.ts: refreshed when the server says it expired) for the
 * machine routes, or an admin workspace key (`SVC_ADMIN_KEY`) for the key routes.
 *
 * @example
 * const answer = await serverClient('http://127.0.0.1:8080', token).freeze({ all: true }, 'incident 42', 12);
 */
export type Page<T> = { data: T[]; next: string | null };
export type AgentWithRules = AgentView & { mandateRules: number };
export type MintedKey = KeyView & { key: string };
/** GET /v1/admin/whoami. */
export type WhoAmI =
  | {
      kind: 'person';
      user: { id: string; email: string; name: string };
      workspace: { id: string; name: string };
      role: string;
      loginId: string;
      expiresAt: string;
    }
  | {
      kind: 'service-token';
      workspace: { id: string; name: string };
      token: { id: string; name: string; scopes: string[]; expiresAt: string };
    };

/** http to anything but this machine: a credential sent there crosses the network in clear. */
export function sendsInClear(url: string): boolean {
  try {
    const { protocol, hostname } = new URL(url);
    return (
      protocol === 'http:' &&
      !['127.0.0.1', 'localhost', '[::1]', '::1'].includes(hostname) &&
      !hostname.startsWith('127.')
    );
  } catch {
    return false;
  }
}

export function serverClient(url: string, bearer?: Bearer) {
  const send = <T>(method: 'GET' | 'POST' | 'DELETE', path: string, body: unknown, token: string | undefined) =>
    callServer<T>(url, method, path, { ...(token ? { bearer: token } : {}), ...(body === undefined ? {} : { body }) });
  const call = async <T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> => {
    if (bearer === undefined || typeof bearer === 'string') return send<T>(method, path, body, bearer);
    try {
      return await send<T>(method, path, body, await bearer.get());
    } catch (err) {
      // A sign-in's access token that expired early (another clock): refreshed once, then asked again.
      if (err instanceof RemoteError && err.status === 401 && err.type === 'token_expired')
        return send<T>(method, path, body, await bearer.refresh());
      throw err;
    }
  };
  /** Every page of a list route, in order. */
  const all = async <T>(path: string): Promise<T[]> => {
    const out: T[] = [];
    for (let cursor: string | null = null; ;) {
      const sep = path.includes('?') ? '&' : '?';
      const page: Page<T> = await call<Page<T>>(
        'GET',
        `${path}${sep}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      out.push(...page.data);
      if (!page.next || page.data.length === 0) return out;
      cursor = page.next;
    }
  };
  const agentPath = (aid: string) => `/v1/admin/agents/${encodeURIComponent(aid)}`;
  const mcpPath = (name: string) => `/v1/admin/mcp-servers/${encodeURIComponent(name)}`;
  return {
    agents: {
      list: (query: { tag?: string | undefined; status?: string | undefined }) => {
        const q = new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => !!e[1])).toString();
        return call<Page<AgentView>>('GET', `/v1/admin/agents${q ? `?${q}` : ''}`).then((p) => p.data);
      },
      create: (input: object) => call<AgentWithRules>('POST', '/v1/admin/agents', input),
      /** Hold `token` on one agent (agents:freeze). */
      stop: (aid: string, reason: string) => call<AgentView>('POST', `${agentPath(aid)}/freeze`, { reason }),
    },
    freeze: (selector: Selector, reason: string, confirmCount?: number) =>
      call<FreezeAnswer>('POST', '/v1/admin/freezes', {
        selector,
        reason,
        ...(confirmCount === undefined ? {} : { confirmCount }),
      }),
    stopAll: {
      on: (reason: string) => call<StopAllState | PendingFreeze>('POST', '/v1/admin/stop-all', { reason }),
      status: () => call<StopAllState>('GET', '/v1/admin/stop-all'),
    },
    drill: () => call<DrillReport>('POST', '/v1/admin/drills', {}),
    approvals: { list: () => all<ApprovalView>('/v1/admin/approvals') },
    keys: {
      mint: (input: MintKeyInput) => call<MintedKey>('POST', '/v1/admin/keys', input),
      list: () => all<KeyView>('/v1/admin/keys'),
      revoke: (id: string) => call<object>('DELETE', `/v1/admin/keys/${encodeURIComponent(id)}`).then(() => undefined),
    },
    /** The workspace's upstream MCP servers and their tools' pins (mcp:read, mcp:write). */
    mcp: {
      servers: () => call<Page<McpServerView>>('GET', '/v1/admin/mcp-servers').then((p) => p.data),
      add: (input: McpServerInput) => call<McpServerAdded>('POST', '/v1/admin/mcp-servers', input),
      test: (name: string) => call<McpServerTest>('GET', mcpPath(name)),
      remove: (name: string) => call<object>('DELETE', mcpPath(name)).then(() => undefined),
      tools: (name: string) => call<McpToolList>('GET', `${mcpPath(name)}/tools`),
      approve: (name: string, tool: string, hash: string, limit: { callsPerMinute?: number | null } = {}) =>
        call<PinView>('POST', `${mcpPath(name)}/tools/${encodeURIComponent(tool)}/approve`, { hash, ...limit }),
    },
    /** Who the credential is: a service token, or a person signed in with svc login. */
    whoami: () => call<WhoAmI>('GET', '/v1/admin/whoami'),
    verify: (receipt: string) => call<Partial<ReceiptVerdict>>('POST', '/v1/verify', { receipt }).then(verdictOnline),
  };
}

export type ServerClient = ReturnType<typeof serverClient>;
