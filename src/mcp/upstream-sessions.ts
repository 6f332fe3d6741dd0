import { ProtocolError, SdkError, SdkErrorCode, type Client } from '@modelcontextprotocol/client';

/**
 * The proxy's upstream sessions (issue 34): each one a connected SDK client, opened for one agent
 * (and, within a caller's MCP session, for that session alone), never shared across agents.
 * Rules:
 * - A session is named by its scope (a caller session's own id, or '' for the agent's requests
 *   without a session), its agent and what else the proxy keys it by (the upstream, the era, the
 *   capabilities declared); the first use opens it, later uses of the same name reuse it.
 * - At most `perAgent` sessions are open for one agent and `perServer` for one upstream: a use
 *   that would open one more is refused with a JSON-RPC error naming the cap and its setting
 *   (-32003, `type: upstream_sessions_full`); nothing already open is closed for it.
 * - A session is ended (its `end`: `DELETE` on Streamable HTTP, then the connection closed) when
 *   its scope ends (the caller's session ended or idled out), when it fails on the way (a
 *   transport error: not the upstream's own JSON-RPC error, nor a deadline passed or a call
 *   cancelled, which leave the session as it was), when its upstream is removed, at shutdown, and, for an agent's sessions
 *   without a caller session, after `idleMs` unused (checked every `sweepMs`). A session in use
 *   is ended only once its last use settles, since ending it fails every call in flight on it.
 */
/** Whether a failure means the upstream session itself is broken (not the upstream's answer, nor a deadline or a cancellation). */
export function brokenBy(err: unknown): boolean {
  return !(err instanceof ProtocolError) && !(err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout);
}

export interface UpstreamSession {
  readonly key: string;
  readonly scope: string;
  readonly agent: string;
  readonly server: string;
  readonly client: Promise<Client>;
  busy: number;
  dropped: boolean;
  lastUsed: number;
}

/** The name of an upstream session: its key, and what the caps and retirements pick it by. */
export interface UpstreamSessionName {
  key: string;
  scope: string;
  agent: string;
  server: string;
}

/** The proxy's upstream sessions (the rules above); in memory only, each a connected client. */
export interface UpstreamSessions {
  /** The session so named, opened with `make` when there is none (past a cap: refused). */
  take(name: UpstreamSessionName, make: () => Promise<Client>): UpstreamSession;
  /** Runs `use` on a session, which is not ended while it runs; a failure other than the upstream's own answer ends it. */
  use<T>(s: UpstreamSession, run: (client: Client) => Promise<T>): Promise<T>;
  /** Whether a session of this key is open. */
  has(key: string): boolean;
  /** How many open sessions' keys a predicate picks. */
  count(pick: (key: string) => boolean): number;
  /** Ends one session (once its last use settles). */
  retire(s: UpstreamSession): Promise<void>;
  /** Ends the sessions a predicate picks (an upstream removed or failing, a caller session ended). */
  retireWhere(pick: (s: UpstreamSession) => boolean): Promise<void>;
  /** The connected clients of one scope (a caller session's), for what it tells them all. */
  clients(scope: string): Array<Promise<Client>>;
  /** How many sessions are open, for the tests' and operators' eyes. */
  readonly size: number;
  /** Ends every session, at shutdown. */
  close(): Promise<void>;
}

export function createUpstreamSessions(deps: {
  now: () => number;
  perAgent: number;
  perServer: number;
  idleMs: number;
  sweepMs: number;
  /** Ends one session upstream (DELETE, then close); never throws. */
  end: (client: Client) => Promise<void>;
}): UpstreamSessions {
  const open = new Map<string, UpstreamSession>();
  /** Every session not yet ended, the dropped ones still in use included. */
  const live = new Set<UpstreamSession>();

  const endIfDone = async (s: UpstreamSession): Promise<void> => {
    if (!s.dropped || s.busy > 0 || !live.delete(s)) return;
    await s.client.then(deps.end, () => {});
  };
  const retire = async (s: UpstreamSession): Promise<void> => {
    if (open.get(s.key) === s) open.delete(s.key);
    s.dropped = true;
    await endIfDone(s);
  };
  const retireWhere = async (pick: (s: UpstreamSession) => boolean): Promise<void> => {
    await Promise.all([...open.values()].filter(pick).map(retire));
  };

  const timer = setInterval(() => {
    const t = deps.now();
    void retireWhere((s) => s.scope === '' && s.busy === 0 && t - s.lastUsed > deps.idleMs);
  }, deps.sweepMs);
  timer.unref();

  const full = (what: string, cap: number, setting: string) =>
    new ProtocolError(
      -32003,
      `Too many upstream MCP sessions: ${what} has ${cap} open, the most allowed (the setting ${setting}). End a session (DELETE /mcp) or wait for one to idle out.`,
      { type: 'upstream_sessions_full', cap, setting },
    );

  return {
    /** The session so named, opened with `make` when there is none (past a cap: refused). */
    take(name: UpstreamSessionName, make: () => Promise<Client>): UpstreamSession {
      const found = open.get(name.key);
      if (found) {
        found.lastUsed = deps.now();
        return found;
      }
      let agentCount = 0;
      let serverCount = 0;
      for (const s of open.values()) {
        if (s.agent === name.agent) agentCount += 1;
        if (s.server === name.server) serverCount += 1;
      }
      if (agentCount >= deps.perAgent) throw full(`agent ${name.agent}`, deps.perAgent, 'mcp.upstreamSessionsPerAgent');
      if (serverCount >= deps.perServer)
        throw full(`upstream ${name.server}`, deps.perServer, 'mcp.upstreamSessionsPerServer');
      const made: UpstreamSession = { ...name, client: make(), busy: 0, dropped: false, lastUsed: deps.now() };
      open.set(name.key, made);
      live.add(made);
      made.client.catch(() => void retire(made));
      return made;
    },

    /** Runs `use` on a session, which is not ended while it runs; a failure other than the upstream's own answer ends it. */
    async use<T>(s: UpstreamSession, run: (client: Client) => Promise<T>): Promise<T> {
      s.busy += 1;
      try {
        return await run(await s.client);
      } catch (err) {
        if (brokenBy(err)) s.dropped = true;
        throw err;
      } finally {
        s.busy -= 1;
        s.lastUsed = deps.now();
        if (s.dropped) await retire(s);
      }
    },

    has: (key: string): boolean => open.has(key),
    /** How many open sessions' keys a predicate picks. */
    count(pick: (key: string) => boolean): number {
      let n = 0;
      for (const key of open.keys()) if (pick(key)) n += 1;
      return n;
    },
    retire,
    /** Ends the sessions a predicate picks (an upstream removed or failing, a caller session ended). */
    retireWhere,
    /** The connected clients of one scope (a caller session's), for what it tells them all. */
    clients(scope: string): Array<Promise<Client>> {
      return [...open.values()].filter((s) => s.scope === scope).map((s) => s.client);
    },
    /** How many sessions are open, for the tests' and operators' eyes. */
    get size(): number {
      return open.size;
    },

    /** Ends every session, at shutdown. */
    async close(): Promise<void> {
      clearInterval(timer);
      const all = [...live];
      open.clear();
      live.clear();
      await Promise.all(all.map((s) => s.client.then(deps.end, () => {})));
    },
  };
}
