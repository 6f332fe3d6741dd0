import test from 'ava';
import type { Server, ServerInjectResponse } from '@hapi/hapi';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import type { ServiceTokenScope } from '../../src/service-tokens/records.js';
import { serviceTokenScopes } from '../../src/service-tokens/index.js';

/**
 * Issue 5: each service-token scope allows its routes and only those. The route
 * table is walked, so a new token route must declare its scope here on purpose; then every token
 * route is called with a token of each scope: the one scope it needs gets its work done, every
 * other scope gets 403 missing_scope.
 */
const SCOPES: ServiceTokenScope[] = [...serviceTokenScopes];

const EXPECTED: Record<string, ServiceTokenScope> = {
  'GET /v1/admin/agents': 'agents:read',
  'POST /v1/admin/agents': 'agents:write',
  'POST /v1/admin/agents/{aid}/freeze': 'agents:freeze',
  'POST /v1/admin/freezes': 'agents:freeze',
  'POST /v1/admin/drills': 'agents:freeze',
  'GET /v1/admin/approvals': 'approvals:read',
  'GET /v1/admin/approvals/suggestions': 'approvals:read',
  'GET /v1/admin/evidence': 'evidence:read',
  'GET /v1/admin/scorecard': 'evidence:read',
  'GET /v1/admin/stop-all': 'agents:read',
  // The upstream MCP servers: added, tested, listed, a change approved, and the one added removed.
  'GET /v1/admin/mcp-servers': 'mcp:read',
  'POST /v1/admin/mcp-servers': 'mcp:write',
  'GET /v1/admin/mcp-servers/{name}': 'mcp:read',
  'GET /v1/admin/mcp-servers/{name}/tools': 'mcp:read',
  'POST /v1/admin/mcp-servers/{name}/tools/{tool}/approve': 'mcp:write',
  'DELETE /v1/admin/mcp-servers/{name}': 'mcp:write',
  // The workspace as a file: exported, planned, applied.
  'GET /v1/admin/setup': 'setup:read',
  'POST /v1/admin/setup/plan': 'setup:read',
  'POST /v1/admin/setup': 'setup:write',
  // Last: it stops every agent of the workspace (the routes above run first, in this order).
  'POST /v1/admin/stop-all': 'agents:freeze',
};

let running: InProcess;
let server: Server;
const tokens = {} as Record<ServiceTokenScope, string>;
let agentId: string;
let blueprintId: string;
let upstream: McpUpstream;
/** The change of the upstream tool `echo` waiting for approval. */
let changedHash: string;

test.before(async () => {
  upstream = await startMcpUpstream();
  running = await inProcessServer({ 'mcp.allowPrivateUpstreams': true });
  server = running.http.server;
  await server.initialize();
  const { people, agents, serviceTokens, mandates, blueprints, mcpProxy } = running.app.services;
  const { workspaceId: wid } = await people.createWorkspace({
    name: 'Scopes',
    ownerEmail: 'owner@scopes.example',
    ownerPassword: 'a-long-password-1',
  });
  agentId = (await agents.create({ workspaceId: wid, name: 'target' })).id;
  const template = await mandates.createTemplate(wid, { name: 'mail', rules: [{ actions: ['email'] }] } as never, {
    actor: 'operator:cli',
  });
  blueprintId = (
    await blueprints.create(wid, { name: 'mailers', tags: [], templates: [template.id] }, { actor: 'operator:cli' })
  ).id;
  // A server whose tool `echo` changed since it was pinned: the approval route has a change to approve.
  await mcpProxy.add(wid, { name: 'pinned', url: upstream.url }, 'operator:cli');
  upstream.change('echo', { description: 'Says the text back, changed.' });
  const listed = await mcpProxy.pinnedTools(wid, 'pinned');
  changedHash = listed.tools.find((x) => x.tool === 'echo')!.changed!.hash;
  for (const scope of SCOPES)
    tokens[scope] = (
      await serviceTokens.create(wid, { name: scope.replace(':', '-'), scopes: [scope], expiresInDays: 1 })
    ).token;
});

test.after.always(async () => {
  await running?.close();
  await upstream?.close();
});

/** The request a route gets: its path with ids filled in, and a body that does its work. */
function requestFor(route: string): { method: string; url: string; payload?: object } {
  const [method, path] = route.split(' ') as [string, string];
  const url = path
    .replace('{aid}', agentId)
    .replace('{name}', method === 'DELETE' ? 'added' : 'pinned')
    .replace('{tool}', 'echo');
  const payloads: Record<string, object> = {
    'POST /v1/admin/agents': { blueprint: blueprintId, name: 'registered' },
    'POST /v1/admin/agents/{aid}/freeze': { reason: 'scope walk' },
    'POST /v1/admin/freezes': { selector: { agentIds: [agentId] }, reason: 'scope walk', confirmCount: 1 },
    'POST /v1/admin/drills': {},
    'POST /v1/admin/stop-all': { reason: 'scope walk' },
    'POST /v1/admin/mcp-servers': { name: 'added', url: upstream.url },
    'POST /v1/admin/mcp-servers/{name}/tools/{tool}/approve': { hash: changedHash },
    'POST /v1/admin/setup/plan': { document: { version: 1 } },
    'POST /v1/admin/setup': { document: { version: 1, templates: [{ name: 'walked', rules: [] }] } },
  };
  return { method, url, ...(route in payloads ? { payload: payloads[route] } : {}) };
}

const inject = (route: string, token: string): Promise<ServerInjectResponse> =>
  server.inject({ ...requestFor(route), headers: { authorization: `Bearer ${token}` }, remoteAddress: '127.0.0.1' });

test.serial('every service-token route declares the scope the docs give it', (t) => {
  const found: Record<string, string | undefined> = {};
  for (const r of server.table()) {
    const auth = r.settings.auth as { strategies?: string[] } | false | undefined;
    if (!auth || !auth.strategies?.includes('service-token')) continue;
    t.deepEqual(auth.strategies, ['service-token'], `${r.path} takes a service token and nothing else`);
    found[`${r.method.toUpperCase()} ${r.path}`] = (r.settings.plugins as { svc?: { tokenScope?: string } } | undefined)
      ?.svc?.tokenScope;
  }
  // The one route without a scope: any token (or svc login's sign-in) asks who it is itself.
  t.deepEqual(found, { ...EXPECTED, 'GET /v1/admin/whoami': undefined });
});

test.serial('GET /v1/admin/whoami: any service token, whatever its scopes, is told who it is', async (t) => {
  for (const scope of SCOPES) {
    const res = await inject('GET /v1/admin/whoami', tokens[scope]);
    t.is(res.statusCode, 200, res.payload);
    t.like(JSON.parse(res.payload), { kind: 'service-token', token: { scopes: [scope] } });
  }
});

for (const [route, needed] of Object.entries(EXPECTED)) {
  test.serial(`${route}: only ${needed} is let in`, async (t) => {
    for (const scope of SCOPES.filter((s) => s !== needed)) {
      const res = await inject(route, tokens[scope]);
      t.is(res.statusCode, 403, `${scope} on ${route}: ${res.payload}`);
      const error = JSON.parse(res.payload).error;
      t.is(error.type, 'missing_scope');
      t.regex(error.message, new RegExp(needed));
    }
    const allowed = await inject(route, tokens[needed]);
    t.true(
      allowed.statusCode >= 200 && allowed.statusCode < 300,
      `${needed} on ${route}: ${allowed.statusCode} ${allowed.payload}`,
    );
  });
}
