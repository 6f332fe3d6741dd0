import test from 'ava';
import { Server } from '@modelcontextprotocol/server';
import { createServerPool, type Track } from '../../src/mcp/reuse.js';
import type { Principal } from '../../src/mcp/sessions.js';

/**
 * The pool of MCP servers reused between requests without a session (src/mcp/reuse.ts): a
 * server goes back only to its own principal, only once its transport closed and its handlers
 * settled, and the idle ones are bounded per principal and in all.
 */
const who = (agentId: string, credentialId = 'key_1'): Principal => ({ workspaceId: 'wsp_1', agentId, credentialId });
const build = (track: Track, tracks?: Track[]) => {
  tracks?.push(track);
  return new Server({ name: 'svc', version: '0' }, { capabilities: {} });
};
/** What the SDK does when the request's transport has closed. */
const closed = (s: Server) => s.onclose?.();

test('a server comes back only to its own principal (agent and credential)', (t) => {
  const pool = createServerPool<Server>();
  const a = pool.take(who('agt_a'), build);
  closed(a);
  t.is(pool.idleCount(), 1);
  t.not(pool.take(who('agt_b'), build), a, 'another agent gets a server of its own');
  t.not(pool.take(who('agt_a', 'key_2'), build), a, 'another credential of the same agent too');
  t.is(pool.take(who('agt_a'), build), a, 'its own principal gets it again');
  t.is(pool.idleCount(), 0);
});

test('a server whose handler still runs is not reused until that handler settles', async (t) => {
  const pool = createServerPool<Server>();
  const tracks: Track[] = [];
  const a = pool.take(who('agt_a'), (track) => build(track, tracks));
  let finish!: () => void;
  const running = tracks[0]!(() => new Promise<void>((resolve) => (finish = resolve)));
  closed(a);
  t.is(pool.idleCount(), 0, 'closed, but its handler runs');
  t.not(pool.take(who('agt_a'), build), a);
  finish();
  await running;
  t.is(pool.idleCount(), 1);
  t.is(pool.take(who('agt_a'), build), a);
});

test('idle servers are bounded per principal and in all; the least recently used principal goes first', (t) => {
  const pool = createServerPool<Server>({ perPrincipal: 2, maxIdle: 3 });
  const mine = [1, 2, 3].map(() => pool.take(who('agt_a'), build));
  mine.forEach(closed);
  t.is(pool.idleCount(), 2, 'two per principal');
  const b = pool.take(who('agt_b'), build);
  const c = pool.take(who('agt_c'), build);
  closed(b);
  closed(c);
  t.is(pool.idleCount(), 3, 'three in all: one of agt_a went');
  t.is(pool.take(who('agt_b'), build), b);
  t.is(pool.take(who('agt_c'), build), c);
  pool.clear();
  const d = pool.take(who('agt_d'), build);
  closed(d);
  t.is(pool.idleCount(), 0, 'nothing is kept after shutdown');
});
