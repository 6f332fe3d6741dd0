import { DeadlineError, diagnose, withDeadline, type UpstreamProblem } from '../diagnosis.js';
import type { PinView } from '../pins.js';
import type { McpServerRecord } from '../records.js';
import type { ProxyContext } from './context.js';
import { CONSOLE } from './types.js';

/** The console's look at a server's pinned tools, and an owner's or admin's approval of a change (pins.ts). */
export interface PinnedTools {
  /**
   * One server's pinned tools, for an owner or admin: its tools are listed again first (when
   * the upstream answers), so that a change shows even before an agent met it.
   */
  pinnedTools(
    wid: string,
    name: string,
  ): Promise<{ reachable: boolean; problem: UpstreamProblem | null; tools: PinView[] }>;
  /** Approves what a tool says now (its change, named by `hash`), serving it again. */
  approveTool(
    wid: string,
    name: string,
    tool: string,
    hash: string,
    actor: string,
    callsPerMinute?: number | null,
  ): Promise<PinView>;
}

export function createPinnedTools(
  ctx: ProxyContext,
  find: (wid: string, name: string) => Promise<McpServerRecord>,
): PinnedTools {
  const { limits, pins, listed, pool } = ctx;
  return {
    async pinnedTools(wid, name) {
      const server = await find(wid, name);
      // The console's own session of the upstream, as an agent's: never an agent's.
      const link = pool.pooledFor({ workspaceId: wid, agentId: CONSOLE });
      let problem: UpstreamProblem | null = null;
      try {
        await withDeadline(listed.offered(server, link), limits.timeoutMs);
      } catch (err) {
        problem = diagnose(err, limits.timeoutMs, ctx.secretOf(server));
        if (!(err instanceof DeadlineError)) await link.drop?.(server);
      }
      return { reachable: problem === null, problem, tools: await pins.list(wid, name) };
    },

    async approveTool(wid, name, tool, hash, actor, callsPerMinute) {
      const server = await find(wid, name);
      return pins.approve(server, tool, hash, actor, callsPerMinute);
    },
  };
}
