import { DeadlineError, withDeadline } from '../diagnosis.js';
import { mayCall } from '../narrowing.js';
import type { McpServerRecord } from '../records.js';
import type { ProxyContext } from './context.js';
import { allowed, exposed, prefixedOwner } from './naming.js';
import type { ProxyCaller, ProxyTarget, UpstreamLink, UpstreamTool } from './types.js';
import { upstreamError } from './upstream-error.js';

/**
 * The upstreams' tools as an agent meets them: listed (tools/list), a name resolved to its
 * upstream, and a call's check against the tool's pin. Every listing goes through listings.ts,
 * which refreshes what the calls' checks use and lets pins.ts see what each upstream says.
 */
export interface ToolListing {
  /**
   * Every upstream's allowed tools that the agent's mandate could allow and that match their
   * pins, under their exposed names, asked of all upstreams at once; an upstream that does not
   * answer within the deadline (`mcp.upstreamTimeoutMs`) is left out, its listing left to go on
   * in the background (it refreshes the listing the calls' checks use when it lands); one that
   * fails has its session ended, and the next listing opens another.
   */
  tools(who: ProxyCaller, link: UpstreamLink): Promise<UpstreamTool[]>;
  /** The upstream server and tool behind an exposed name, or undefined. */
  resolve(wid: string, name: string, link: UpstreamLink): Promise<ProxyTarget | undefined>;
  /**
   * A proxied tool's input schema (`target`, resolved), from the upstream's recent listing
   * (listed again through `link` only when older than PIN_RECHECK_MS, as for the call's pin
   * check), or undefined.
   */
  inputSchema(target: ProxyTarget, link: UpstreamLink): Promise<unknown>;
  /**
   * Refuses a call of a tool whose description or schema is not the approved one (or that is not
   * listed); else the calls per minute each agent may make of it (its pin's; null: no limit).
   */
  checkPinned(target: ProxyTarget, link: UpstreamLink): Promise<number | null>;
}

export function createToolListing(ctx: ProxyContext, list: (wid: string) => Promise<McpServerRecord[]>): ToolListing {
  const { deps, listed, limits, pins } = ctx;
  return {
    async tools(who, link) {
      const [rules, all] = await Promise.all([deps.rules(who.workspaceId, who.agentId), list(who.workspaceId)]);
      const now = deps.clock.now();
      const lists = await Promise.all(
        all.map(async (server) => {
          try {
            const { tools, served } = await withDeadline(listed.offered(server, link), limits.timeoutMs);
            return tools
              .filter((tool) => served.has(tool.name) && mayCall(rules, server, tool.name, now))
              .map((tool) => ({ ...tool, name: exposed(server, tool.name) }) as UpstreamTool);
          } catch (err) {
            if (!(err instanceof DeadlineError)) await link.drop?.(server);
            return [];
          }
        }),
      );
      return lists.flat();
    },

    async resolve(wid, name, link) {
      const all = await list(wid);
      const prefixed = prefixedOwner(all, name);
      if (prefixed)
        return allowed(prefixed.server, prefixed.inner) ? { server: prefixed.server, tool: prefixed.inner } : undefined;
      // An unprefixed name belongs to whichever unprefixed server lists it: each is asked once, together.
      const owners = await Promise.all(
        all
          .filter((s) => s.unprefixed && allowed(s, name))
          .map(async (s) => {
            try {
              return (await withDeadline(listed.offered(s, link), limits.timeoutMs)).tools.some((x) => x.name === name)
                ? s
                : undefined;
            } catch (err) {
              if (!(err instanceof DeadlineError)) await link.drop?.(s);
              return undefined;
            }
          }),
      );
      const server = owners.find((s) => s !== undefined);
      return server ? { server, tool: name } : undefined;
    },

    async inputSchema(target, link) {
      return (await listed.recent(target.server, link)).find((x) => x.name === target.tool)?.inputSchema;
    },

    async checkPinned(target, link) {
      let tools: UpstreamTool[];
      try {
        tools = await withDeadline(listed.recent(target.server, link), limits.timeoutMs);
      } catch (err) {
        await link.drop?.(target.server);
        throw upstreamError(err, target.server, limits.timeoutMs, ctx.secretOf(target.server));
      }
      const admitted = await pins.admission(
        target.server,
        exposed(target.server, target.tool),
        target.tool,
        tools.find((x) => x.name === target.tool),
      );
      if (admitted.refusal) throw admitted.refusal;
      return admitted.callsPerMinute;
    },
  };
}
