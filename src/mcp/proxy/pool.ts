import { randomUUID } from 'node:crypto';
import type { Client, ClientCapabilities } from '@modelcontextprotocol/client';
import type { Clock } from '../../lib/clock.js';
import type { McpServerRecord } from '../records.js';
import { createUpstreamSessions, type UpstreamSession, type UpstreamSessions } from '../upstream-sessions.js';
import type { UpstreamConnections } from './connections.js';
import { agentKey, serverKey } from './naming.js';
import {
  MAX_CAPABILITY_KEY,
  MAX_CAPABILITY_SETS,
  type ProxyCaller,
  type SessionScope,
  type UpstreamEra,
  type UpstreamHooks,
  type UpstreamLimits,
  type UpstreamLink,
} from './types.js';

/**
 * The upstream sessions the proxy's requests travel on (upstream-sessions.ts): one per agent,
 * upstream, era and declared capability set for the agent's requests without a caller session,
 * one per caller session and upstream within one; never one agent's for another. A 2026-07-28
 * caller's call that relays nothing back but declares capabilities (the upstream may answer
 * input_required for them) takes the session declaring that same set: at most
 * MAX_CAPABILITY_SETS sets per agent and upstream (a call past that, or with a set over
 * MAX_CAPABILITY_KEY characters, is attached to the agent's plain session instead, declaring its
 * set).
 */
export interface UpstreamPool {
  /** The sessions themselves: take, use, retire, count. */
  readonly sessions: UpstreamSessions;
  /** The session of an agent's requests without a caller session, declaring `capabilities` (none: the era's plain one); undefined past the caps on sets. */
  sessionOf(
    who: ProxyCaller,
    server: McpServerRecord,
    era?: UpstreamEra,
    capabilities?: ClientCapabilities,
  ): UpstreamSession | undefined;
  /** The link of an agent's requests without a caller session, in its era (and declaring `capabilities`). */
  pooledFor(who: ProxyCaller, era?: UpstreamEra, capabilities?: ClientCapabilities): UpstreamLink;
  /** A caller session's link: its own session of each upstream, opened on first use with `hooks`. */
  sessionScope(who: ProxyCaller, hooks: () => UpstreamHooks): SessionScope;
  /** Ends every session of one server (it was removed, disabled or changed). */
  retireServer(server: McpServerRecord): Promise<void>;
}

/** JSON with every object's keys sorted, so that equal capability sets have one text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

export function createUpstreamPool(deps: {
  clock: Clock;
  limits: UpstreamLimits;
  connections: UpstreamConnections;
}): UpstreamPool {
  const { limits, connections } = deps;
  const sessions = createUpstreamSessions({
    now: () => deps.clock.now(),
    perAgent: limits.sessionsPerAgent,
    perServer: limits.sessionsPerServer,
    idleMs: limits.idleMs,
    sweepMs: Math.min(limits.idleMs, 10_000),
    end: (client: Client) => connections.end(client),
  });
  const sessionOf: UpstreamPool['sessionOf'] = (who, server, era = 'legacy', capabilities) => {
    const caps = capabilities === undefined || Object.keys(capabilities).length === 0 ? '' : canonical(capabilities);
    const plain = `|${agentKey(who)}|${era}|${serverKey(server)}`;
    const key = caps === '' ? plain : `${plain}#${caps}`;
    if (caps !== '' && !sessions.has(key)) {
      if (caps.length > MAX_CAPABILITY_KEY) return undefined;
      if (sessions.count((k) => k.startsWith(`${plain}#`)) >= MAX_CAPABILITY_SETS) return undefined;
    }
    const name = { key, scope: '', agent: agentKey(who), server: serverKey(server) };
    return sessions.take(name, () =>
      connections.open(server, caps === '' ? {} : { capabilities: capabilities! }, era, who.agentId),
    );
  };
  return {
    sessions,
    sessionOf,

    pooledFor(who, era = 'legacy', capabilities) {
      const sessionFor = (server: McpServerRecord) =>
        sessionOf(who, server, era, capabilities) ?? sessionOf(who, server, era)!;
      const link: UpstreamLink = (server) => sessionFor(server).client;
      link.use = (server, run) => sessions.use(sessionFor(server), run);
      // The agent's sessions of an upstream that failed on the way end; the next request opens another.
      link.drop = (server) =>
        sessions.retireWhere((s) => s.scope === '' && s.agent === agentKey(who) && s.server === serverKey(server));
      return link;
    },

    sessionScope(who, hooks) {
      const scope = `s${randomUUID()}`;
      const sessionFor = (server: McpServerRecord) =>
        sessions.take(
          { key: `${scope}|${serverKey(server)}`, scope, agent: agentKey(who), server: serverKey(server) },
          () => connections.open(server, hooks(), 'legacy', who.agentId),
        );
      const link: UpstreamLink = (server) => sessionFor(server).client;
      link.use = (server, run) => sessions.use(sessionFor(server), run);
      link.drop = (server) => sessions.retireWhere((s) => s.scope === scope && s.server === serverKey(server));
      return {
        link,
        clients: () => sessions.clients(scope),
        end: () => sessions.retireWhere((s) => s.scope === scope),
      };
    },

    retireServer: (server) => sessions.retireWhere((s) => s.server === serverKey(server)),
  };
}
