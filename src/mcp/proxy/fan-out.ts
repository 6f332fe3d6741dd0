import { ProtocolError, type Client } from '@modelcontextprotocol/client';
import { withDeadline } from '../diagnosis.js';
import { mayUseServer } from '../narrowing.js';
import type { McpServerRecord } from '../records.js';
import type { ProxyContext } from './context.js';
import { prefixedOwner } from './naming.js';
import { refuseIfStopped } from './standing.js';
import { MAX_PAGES, type ProxyCaller, type UpstreamLink } from './types.js';
import { upstreamError } from './upstream-error.js';

/**
 * Resources, resource templates, prompts and completions of the upstreams, for a caller whose
 * agent is running (a stopped agent's request is refused before any upstream is asked). Prompts
 * are named like tools and offered only of servers the agent could act on (narrowing.ts);
 * resources keep their URIs, and a read goes to the first upstream that answers for the URI.
 */
export interface FanOut {
  /**
   * A request for the upstreams' resources, prompts or completions, for a running agent: `ask`
   * is put to each upstream that declares `capability`, in the order they were added, and the
   * first answer wins. With none declaring it: -32601, as for any method a server lacks.
   */
  first<T>(
    who: ProxyCaller,
    capability: 'resources' | 'prompts' | 'completions',
    link: UpstreamLink,
    ask: (client: Client, server: McpServerRecord) => Promise<T | undefined>,
    missing?: () => ProtocolError,
  ): Promise<T>;
  /** Every upstream's answer to a list request (all its pages), merged; upstreams that fail are left out. */
  all<T>(
    who: ProxyCaller,
    capability: 'resources' | 'prompts',
    link: UpstreamLink,
    list: (client: Client, server: McpServerRecord, cursor?: string) => Promise<{ items: T[]; nextCursor?: string }>,
  ): Promise<T[]>;
  /** The upstream prompt behind an exposed prompt name (a prefixed one), or undefined. */
  promptTarget(wid: string, name: string): Promise<{ server: McpServerRecord; prompt: string } | undefined>;
}

export function createFanOut(ctx: ProxyContext, list: (wid: string) => Promise<McpServerRecord[]>): FanOut {
  const { deps, limits } = ctx;
  /** The upstream servers whose prompts an agent is offered (narrowing.ts). */
  const promptServers = async (who: ProxyCaller, servers: McpServerRecord[]) => {
    const rules = await deps.rules(who.workspaceId, who.agentId);
    return servers.filter((s) => mayUseServer(rules, s));
  };
  /** The servers asked for a capability: all, or for prompts those the agent could act on. */
  const askedFor = async (who: ProxyCaller, capability: string) => {
    const all = await list(who.workspaceId);
    return capability === 'prompts' ? promptServers(who, all) : all;
  };

  return {
    async first(who, capability, link, ask, missing) {
      await refuseIfStopped(deps.store, who);
      let failure: unknown;
      let failedOn: McpServerRecord | undefined;
      for (const server of await askedFor(who, capability)) {
        let client: Client;
        try {
          client = await withDeadline(link(server), limits.timeoutMs);
        } catch (err) {
          failedOn ??= server;
          failure ??= err;
          continue;
        }
        if (!client.getServerCapabilities()?.[capability]) continue;
        try {
          const answer = await ask(client, server);
          if (answer !== undefined) return answer;
        } catch (err) {
          failedOn ??= server;
          failure ??= err;
        }
      }
      if (failure !== undefined)
        throw upstreamError(failure, undefined, limits.timeoutMs, failedOn && ctx.secretOf(failedOn));
      if (missing) throw missing();
      throw new ProtocolError(-32601, `No upstream MCP server here offers ${capability}.`);
    },

    async all<T>(
      who: ProxyCaller,
      capability: 'resources' | 'prompts',
      link: UpstreamLink,
      listPage: (
        client: Client,
        server: McpServerRecord,
        cursor?: string,
      ) => Promise<{ items: T[]; nextCursor?: string }>,
    ): Promise<T[]> {
      await refuseIfStopped(deps.store, who);
      // Each upstream within the deadline: a late one leaves out only its own items.
      const pages = async (server: McpServerRecord): Promise<T[]> => {
        const client = await link(server);
        if (!client.getServerCapabilities()?.[capability]) return [];
        const items: T[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < MAX_PAGES; page += 1) {
          const answer = await listPage(client, server, cursor);
          items.push(...answer.items);
          if (!answer.nextCursor) break;
          cursor = answer.nextCursor;
        }
        return items;
      };
      const lists = await Promise.all(
        (await askedFor(who, capability)).map((server) =>
          withDeadline(pages(server), limits.timeoutMs).catch(() => [] as T[]),
        ),
      );
      return lists.flat();
    },

    async promptTarget(wid, name) {
      const prefixed = prefixedOwner(await list(wid), name);
      return prefixed ? { server: prefixed.server, prompt: prefixed.inner } : undefined;
    },
  };
}
