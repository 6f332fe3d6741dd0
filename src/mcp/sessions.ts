import { randomBytes } from 'node:crypto';
import type { Store } from '../store/index.js';
import { keyStands } from '../keys/index.js';
import { sessionCredentialsRepo } from './repo.js';

/**
 * MCP sessions at /mcp (Streamable HTTP session management, protocol revision 2025-11-25): an
 * `initialize` opens one, answered with an `Mcp-Session-Id`; later requests carrying that id reach
 * the same server and transport, so that what the session holds (the client's capabilities, its
 * open streams, the upstream sessions the proxy opened for it, answers to requests the server
 * sent) lives across requests.
 * Rules:
 * - A session belongs to the credential that opened it (an agent key, or an OAuth connection,
 *   whose refreshed tokens keep it): any other credential presenting its id is told it does not
 *   exist (404), exactly as for an id never issued or already ended.
 * - Ids are 32 random bytes in base64url (visible ASCII only).
 * - A session ends on DELETE, after IDLE_MS with no request open, when its credential is
 *   revoked or its agent removed (checked every SWEEP_MS), or when its agent opens more than
 *   PER_AGENT_MAX sessions (the least recently used goes first). The process keeps sessions in
 *   memory: a restart ends them all, and clients initialize again.
 */
export const IDLE_MS = 30 * 60_000;
export const SWEEP_MS = 10_000;
export const PER_AGENT_MAX = 32;

export interface Principal {
  workspaceId: string;
  agentId: string;
  /** The agent key's id, or the OAuth connection's id. */
  credentialId: string;
}

export interface Session {
  id: string;
  principal: Principal;
  lastSeen: number;
  /** Requests (and streams) of this session still open: a session with one is never idle. */
  open: number;
  close(): Promise<void>;
}

/** Whether a session's credential still stands: its agent is not removed, its key not revoked or expired, its connection not ended. */
export function credentialLive(store: Store, now: () => number = Date.now): (p: Principal) => Promise<boolean> {
  const repo = sessionCredentialsRepo(store);
  return async (p) => {
    const [agent, key] = await Promise.all([
      repo.agent(p.workspaceId, p.agentId),
      repo.key(p.workspaceId, p.credentialId),
    ]);
    if (!agent || agent.removedAt) return false;
    if (key) return keyStands(key, now());
    const connection = await repo.connection(p.workspaceId, p.credentialId);
    return connection !== undefined && connection.endedAt === null;
  };
}

export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The 2025 MCP sessions open at /mcp, in memory: each its caller's, swept every SWEEP_MS (ended
 * once idle IDLE_MS with no request open, or once its credential is no longer valid), at most
 * PER_AGENT_MAX per agent. Reads the store only through `stillValid`.
 */
export interface Sessions {
  /** Keeps a session just opened; past its agent's cap, the least recently used of its others ends. */
  add(session: Session): void;
  /** The session with this id, if it exists and belongs to this principal. */
  find(id: string, principal: Principal): Session | undefined;
  /** A request of the session begins; the returned function marks its end. */
  enter(session: Session): () => void;
  /** Forgets a session that closed itself (DELETE, or its transport closed). */
  forget(id: string): void;
  /** Ends every session, at shutdown. */
  closeAll(): Promise<void>;
}

export function createSessions(options: {
  now?: () => number;
  stillValid: (p: Principal) => Promise<boolean>;
}): Sessions {
  const now = options.now ?? Date.now;
  const sessions = new Map<string, Session>();

  const end = (session: Session): void => {
    if (sessions.get(session.id) !== session) return;
    sessions.delete(session.id);
    void session.close().catch(() => {});
  };

  // One sweep at a time: a slow store never piles sweeps up. A credential that cannot be read
  // (the store unreachable) keeps its session until a sweep can tell.
  let sweeping = false;
  const sweep = async (): Promise<void> => {
    const t = now();
    const all = [...sessions.values()];
    const valid = await Promise.all(all.map((s) => options.stillValid(s.principal).catch(() => true)));
    all.forEach((session, i) => {
      if (!valid[i] || (session.open === 0 && t - session.lastSeen > IDLE_MS)) end(session);
    });
  };
  const timer = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    void sweep().finally(() => {
      sweeping = false;
    });
  }, SWEEP_MS);
  timer.unref();

  const same = (a: Principal, b: Principal) =>
    a.workspaceId === b.workspaceId && a.agentId === b.agentId && a.credentialId === b.credentialId;

  return {
    /** Keeps a session just opened; past its agent's cap, the least recently used of its others ends. */
    add(session: Session): void {
      sessions.set(session.id, session);
      const mine = [...sessions.values()].filter(
        (s) =>
          s.principal.agentId === session.principal.agentId &&
          s.principal.workspaceId === session.principal.workspaceId,
      );
      if (mine.length > PER_AGENT_MAX)
        end(mine.filter((s) => s !== session).sort((a, b) => a.lastSeen - b.lastSeen)[0]!);
    },
    /** The session with this id, if it exists and belongs to this principal. */
    find(id: string, principal: Principal): Session | undefined {
      const session = sessions.get(id);
      return session && same(session.principal, principal) ? session : undefined;
    },
    /** A request of the session begins; the returned function marks its end. */
    enter(session: Session): () => void {
      session.open += 1;
      session.lastSeen = now();
      let done = false;
      return () => {
        if (done) return;
        done = true;
        session.open -= 1;
        session.lastSeen = now();
      };
    },
    /** Forgets a session that closed itself (DELETE, or its transport closed). */
    forget(id: string): void {
      sessions.delete(id);
    },
    async closeAll(): Promise<void> {
      clearInterval(timer);
      const all = [...sessions.values()];
      sessions.clear();
      await Promise.all(all.map((s) => s.close().catch(() => {})));
    },
  };
}
