import test from 'ava';
import type { Server } from '@hapi/hapi';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';

/**
 * Approvals are decided only by signed-in people, and no key or
 * token lifts a freeze. The whole route table is walked: every route that decides an approval,
 * restarts an agent or lifts "stop every agent" — and every route whose path could — takes the
 * session strategies and nothing else, so no credential of a machine is even read there.
 */
let running: InProcess;
let server: Server;

test.before(async () => {
  running = await inProcessServer();
  server = running.http.server;
  await server.initialize();
});

test.after.always(() => running?.close());

const SESSION = new Set(['session', 'session-host']);

/** A route that decides an approval or lifts a hold, whatever it is called. */
const liftsOrDecides = (method: string, path: string) =>
  /\/approvals?\/[^/]+\/(approve|deny)$/.test(path) ||
  /\/(restart|unfreeze|resume|start)$/.test(path) ||
  (method === 'delete' && /stop-all|freez|hold/.test(path));

test('no route a key, token or signature reaches decides an approval or lifts a freeze', (t) => {
  const routes = server.table();
  const guarded = routes.filter((r) => liftsOrDecides(r.method, r.path));
  const names = guarded.map((r) => `${r.method.toUpperCase()} ${r.path}`).sort();
  t.deepEqual(
    names,
    [
      'DELETE /api/w/{wid}/stop-all',
      'POST /api/w/{wid}/agents/{aid}/restart',
      'POST /api/w/{wid}/approvals/{apid}/approve',
      'POST /api/w/{wid}/approvals/{apid}/deny',
    ],
    'the walk found every such route (a new one must be added here on purpose)',
  );
  for (const route of guarded) {
    const auth = route.settings.auth as { strategies?: string[] } | false | undefined;
    const strategies = auth ? (auth.strategies ?? []) : [];
    t.true(
      strategies.length > 0 && strategies.every((s) => SESSION.has(s)),
      `${route.method} ${route.path} takes ${strategies.join(', ') || 'no auth'}`,
    );
  }
  // And no machine route (/v1/) has any such verb at all, except turning "stop every agent" on and
  // reading it (`svc stop-all on|status` with a token): never off; and approving an upstream MCP
  // tool's pinned description and schemas (`svc mcp tools approve`, an mcp:write token), which
  // decides what a tool may tell agents, never whether an action happens (each call still goes to
  // the gate, and its approvals to people).
  t.deepEqual(
    routes
      .filter((r) => r.path.startsWith('/v1/') && /(approve|deny|restart|unfreeze|stop-all)/.test(r.path))
      .map((r) => `${r.method.toUpperCase()} ${r.path}`)
      .sort(),
    ['GET /v1/admin/stop-all', 'POST /v1/admin/mcp-servers/{name}/tools/{tool}/approve', 'POST /v1/admin/stop-all'],
  );
});
