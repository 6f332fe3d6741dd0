import type { Clock } from '../lib/clock.js';
import type { McpServerRecord } from './records.js';
import type { Pins } from './pins.js';
import type { UpstreamLink, UpstreamTool } from './proxy/types.js';

/** How old an upstream's tool listing may be when a call is checked against its pins. */
export const PIN_RECHECK_MS = 10_000;

/**
 * Each upstream's last tool listing (its allowed tools, under their upstream names), so that a
 * call can be checked against its pins without asking the upstream every time.
 * Rules:
 * - It holds what an upstream said and when, never a pin: pins are read from the store at each use.
 * - Every listing made (an agent's tools/list, a call's check, the console's view) refreshes it,
 *   and the pins take note of what it shows (pins.observe: a new state recorded once).
 * - A call's check uses a listing at most PIN_RECHECK_MS old (by the injected clock), else lists
 *   again; calls that find it old at the same moment share that one listing.
 */
export interface Listings {
  /**
   * The tools an upstream offers now (its allowed ones), pinned and not, listed through `link`
   * and kept as its last listing; `served`: the names of those that match their pins.
   */
  offered(server: McpServerRecord, link: UpstreamLink): Promise<{ tools: UpstreamTool[]; served: Set<string> }>;
  /** The upstream's allowed tools as listed at most PIN_RECHECK_MS ago (listed again through `link` when older). */
  recent(server: McpServerRecord, link: UpstreamLink): Promise<UpstreamTool[]>;
  /** Forgets a removed (or changed) server's listing. */
  forget(server: McpServerRecord): void;
}

export function createListings(deps: {
  clock: Clock;
  pins: Pins;
  allowed: (server: McpServerRecord, tool: string) => boolean;
  keyOf: (server: McpServerRecord) => string;
  timeoutMs: number;
}): Listings {
  const { clock, pins } = deps;
  const listings = new Map<string, { at: number; tools: UpstreamTool[] }>();
  const relisting = new Map<string, Promise<UpstreamTool[]>>();

  const offered: Listings['offered'] = async (server, link) => {
    const { tools } = await (await link(server)).listTools(undefined, { timeout: deps.timeoutMs });
    const mine = (tools as UpstreamTool[]).filter((tool) => deps.allowed(server, tool.name));
    listings.set(deps.keyOf(server), { at: clock.now(), tools: mine });
    return { tools: mine, served: await pins.observe(server, mine) };
  };

  return {
    offered,

    async recent(server, link) {
      const key = deps.keyOf(server);
      const seen = listings.get(key);
      if (seen && clock.now() - seen.at < PIN_RECHECK_MS) return seen.tools;
      let pending = relisting.get(key);
      if (!pending) {
        pending = offered(server, link).then((o) => o.tools);
        relisting.set(key, pending);
        void pending.catch(() => {}).finally(() => relisting.delete(key));
      }
      return pending;
    },

    forget(server) {
      listings.delete(deps.keyOf(server));
    },
  };
}
