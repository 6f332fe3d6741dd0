import type { Server } from '@modelcontextprotocol/server';
import type { Principal } from './sessions.js';

/**
 * MCP servers kept for reuse between requests served without a session (a 2025-11-25 stateless
 * request, every 2026-07-28 request): building the SDK's server (its handlers and their schema
 * validators) for every request cost more than the rest of a proxied call.
 * Rules:
 * - A server is one principal's (workspace, agent, credential): it is built for it and only ever
 *   handed to that principal's requests, so nothing a server holds (its caller, what the SDK
 *   noted of the client) can reach another caller. What varies per request (the caller's
 *   envelope, capabilities, answers, progress token) is read from the request itself.
 * - A server serves one request at a time (the SDK refuses a second transport). It comes back
 *   for reuse only once its transport has closed AND none of its handlers still runs, so that a
 *   handler of an ended request can never send on the next request's transport.
 * - Nothing about an agent's standing is kept: every request reads it from the store anew (a
 *   freeze written by any process is seen by the very next call).
 * - At most PER_PRINCIPAL idle servers per principal, MAX_IDLE in all (the least recently used
 *   principal's go first); a server past that is left to the garbage collector.
 */
export const PER_PRINCIPAL = 32;
export const MAX_IDLE = 256;

/** Counts a handler of a pooled server as running until its promise settles. */
export type Track = <T>(run: () => Promise<T>) => Promise<T>;

export function principalKey(p: Principal): string {
  return JSON.stringify([p.workspaceId, p.agentId, p.credentialId]);
}

/** Idle MCP servers kept per principal for reuse (the rules above); in memory only. */
export interface ServerPool<S extends Server> {
  /**
   * An idle server of this principal, or one `build` makes (given the tracker its handlers
   * run under). It comes back when its transport closes and its last handler has settled.
   */
  take(principal: Principal, build: (track: Track) => S): S;
  /** How many servers wait idle (for tests and metrics). */
  idleCount(): number;
  /** Forgets every idle server (at shutdown); none is taken back afterwards. */
  clear(): void;
}

export function createServerPool<S extends Server>(
  limits: { perPrincipal?: number; maxIdle?: number } = {},
): ServerPool<S> {
  const perPrincipal = limits.perPrincipal ?? PER_PRINCIPAL;
  const maxIdle = limits.maxIdle ?? MAX_IDLE;
  interface Entry {
    key: string;
    running: number;
    idle: boolean;
  }
  const entries = new WeakMap<S, Entry>();
  /** Idle servers by principal key; the Map's order is the order of last use. */
  const idle = new Map<string, S[]>();
  let count = 0;
  let closed = false;

  const give = (server: S): void => {
    const entry = entries.get(server);
    if (!entry || entry.idle || entry.running > 0 || server.transport !== undefined || closed) return;
    let list = idle.get(entry.key);
    if (list) idle.delete(entry.key);
    else list = [];
    idle.set(entry.key, list);
    if (list.length >= perPrincipal) return;
    while (count >= maxIdle) {
      const [oldestKey, oldest] = idle.entries().next().value as [string, S[]];
      const evicted = oldest.shift();
      if (!evicted) break;
      entries.get(evicted)!.idle = false;
      count -= 1;
      if (oldest.length === 0 && oldestKey !== entry.key) idle.delete(oldestKey);
    }
    entry.idle = true;
    list.push(server);
    count += 1;
  };

  return {
    /**
     * An idle server of this principal, or one `build` makes (given the tracker its handlers
     * run under). It comes back when its transport closes and its last handler has settled.
     */
    take(principal: Principal, build: (track: Track) => S): S {
      const key = principalKey(principal);
      const list = idle.get(key);
      const found = list?.pop();
      if (list?.length === 0) idle.delete(key);
      if (found) {
        entries.get(found)!.idle = false;
        count -= 1;
        return found;
      }
      const entry: Entry = { key, running: 0, idle: false };
      const track: Track = async (run) => {
        entry.running += 1;
        try {
          return await run();
        } finally {
          entry.running -= 1;
          if (entry.running === 0) give(server);
        }
      };
      const server = build(track);
      entries.set(server, entry);
      // The SDK calls onclose once the transport is gone; the serving entry (createMcpHandler)
      // wraps it for its own bookkeeping and calls this one too.
      server.onclose = () => give(server);
      return server;
    },
    /** How many servers wait idle (for tests and metrics). */
    idleCount: () => count,
    /** Forgets every idle server (at shutdown); none is taken back afterwards. */
    clear(): void {
      closed = true;
      idle.clear();
      count = 0;
    },
  };
}
