import { generateKeyPairSync } from 'node:crypto';
import test from 'ava';
import type { RequestRoute, Server } from '@hapi/hapi';
import type { App } from '../../src/app.js';
import { declaredPermission, permissionFor, type PermissionOption } from '../../src/http/auth/permission.js';
import { roleAllows, type Permission } from '../../src/people/index.js';
import type { Role } from '../../src/people/records.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';

/**
 * The role table (issue 15 item 3): every console route of a workspace,
 * reads and writes, called by each role. Owners and admins manage everything; members manage
 * the agents that act for them; analysts read reports; auditors read evidence and the ledger.
 *
 * The permission each route needs is read from the server's own route table (the route option
 * `app.permission`), and the roles it admits from the one permission table (people/permissions.ts):
 * a role it admits must get the route's answer, any other exactly 403. A route under /api/w/{wid}/
 * that declares no permission, or has no row here, fails the first test, so a route added later
 * cannot go unchecked. Rows name by hand only what the services decide beyond the permission
 * (an agent that does not act for a member is, to them, not found).
 *
 * Outcomes: `ok` is an answer below 400 (the route did its work); `reached` passed the
 * permission check (any answer but 401 and 403: the object named may not exist); `forbidden` is
 * exactly 403 forbidden (the role may never do this); `not_found` is exactly 404 not_found (a
 * member or analyst asking about an agent that does not act for them: to them it does not exist,
 * as an agent of another workspace does not).
 */
const ROLES: Role[] = ['owner', 'admin', 'member', 'analyst', 'auditor'];
type Outcome = 'ok' | 'reached' | 'forbidden' | 'not_found';

let running: InProcess;
let app: App;
let server: Server;
let wid: string;
const ids = {} as Record<Role, string>;
const cookies = {} as Record<Role, string>;
/** An agent acting for the owner, and one acting for the member. */
let ownersAgent: string;
let membersAgent: string;
/** A pending approval of the owner's agent. */
let ownersApproval: string;
let n = 0;
const unique = () => `x${(n += 1)}`;
/** A well-formed id that names nothing, for routes whose object is looked up after the role check. */
const nothing = (prefix: string) => `${prefix}_${'0'.repeat(22)}`;
const PASSWORD = 'role table password 1';

test.before(async () => {
  running = await inProcessServer({
    'rateLimits.signInPerMinute': 1_000_000,
    'rateLimits.publicPerMinute': 1_000_000,
    'webhooks.allowPrivateTargets': true,
  });
  app = running.app;
  server = running.http.server;
  const { people, agents } = app.services;
  const made = await people.createWorkspace({
    name: 'Roles',
    ownerEmail: 'owner@acme.example',
    ownerPassword: PASSWORD,
  });
  wid = made.workspaceId;
  ids.owner = made.ownerId;
  for (const role of ['admin', 'member', 'analyst', 'auditor'] as const)
    ids[role] = (
      await people.addMember({ workspaceId: wid, email: `${role}@acme.example`, password: PASSWORD, role })
    ).id;
  await server.initialize();
  for (const role of ROLES) {
    const res = await server.inject({
      method: 'POST',
      url: '/api/session',
      headers: { 'x-svc-csrf': '1' },
      payload: { email: `${role}@acme.example`, password: PASSWORD },
    });
    if (res.statusCode !== 200) throw new Error(`sign-in ${role}: ${res.payload}`);
    cookies[role] = String([res.headers['set-cookie']].flat()[0]).split(';')[0]!;
  }
  ownersAgent = (await agents.create({ workspaceId: wid, name: 'owners-bot', actsFor: ids.owner })).id;
  membersAgent = (await agents.create({ workspaceId: wid, name: 'members-bot', actsFor: ids.member })).id;
  // A payment of the owner's agent waits for a person: an approval the member must not see.
  const owner = { actor: `user:${ids.owner}`, userId: ids.owner, role: 'owner' as const };
  const rule = { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'], approval: { above: 10 } };
  await app.services.mandates.put(wid, ownersAgent, { rules: [rule], confirmBroaden: false }, owner);
  const waiting = await app.services.gate.authorize(
    { workspaceId: wid, agentId: ownersAgent },
    { type: 'payment', summary: 'Pay Acme', payment: { amount: 500, currency: 'EUR', merchant: 'acme.example' } },
  );
  ownersApproval = waiting.action.approvalId!;
});

test.after.always(() => running?.close());

interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers of every shape, read field by field
  body: any;
  text: string;
}

async function call(role: Role, method: string, path: string, payload?: unknown): Promise<Reply> {
  const res = await server.inject({
    method,
    url: `/api/w/${wid}${path}`,
    headers: { cookie: cookies[role], ...(method === 'GET' ? {} : { 'x-svc-csrf': '1' }) },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  let body: unknown;
  try {
    body = JSON.parse(res.payload);
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, body, text: res.payload };
}

interface Row {
  /** `METHOD /api/w/{wid}/…` exactly as the route table has it. */
  route: string;
  /** What this row is about, when a route has more than one row. */
  about?: string;
  /** What a role the route's permission admits gets: `ok` (the default) or `reached` (the object named may not exist). */
  admitted?: 'ok' | 'reached';
  /** The path parameters the call names, where the route's permission depends on one (PUT …/integrations/{kind}). */
  params?: Record<string, string>;
  /** Outcomes the services decide beyond the permission, by role (an admitted role may still not see an agent). */
  beyond?: Partial<Record<Role, Outcome>>;
  call: (role: Role) => Promise<Reply>;
  /** Checks on an allowed answer (what this role may see in it). */
  check?: (role: Role, res: Reply) => void;
  /** Puts back what an allowed call changed, so that every role meets the same state. */
  undo?: () => Promise<unknown>;
}

/** A public P-256 key, as an agent's AP2 holder key. */
const HOLDER_JWK = (() => {
  const { kty, crv, x, y } = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
  return { kty, crv, x, y };
})();

/** Writes on another person's agent: a member (whom `agents.manage` admits) does not see it. */
const othersAgentWrite: Partial<Record<Role, Outcome>> = { member: 'not_found' };

/** A fresh agent acting for the owner (for routes that remove it). */
const freshAgent = async () =>
  (await app.services.agents.create({ workspaceId: wid, name: unique(), actsFor: ids.owner })).id;
const freshKey = async (agentId: string) => (await app.services.keys.mint(wid, { scope: 'agent', agentId }, 'test')).id;
const ids_ = (res: Reply) => (res.body?.data ?? []).map((x: { id: string }) => x.id) as string[];

const rows: Row[] = [
  // Members
  { route: 'GET /api/w/{wid}/members', call: (r) => call(r, 'GET', '/members') },
  {
    route: 'POST /api/w/{wid}/members',
    call: (r) =>
      call(r, 'POST', '/members', {
        email: `${unique()}@acme.example`,
        name: 'New',
        role: 'analyst',
        password: 'a-long-password-1',
      }),
  },
  {
    route: 'PATCH /api/w/{wid}/members/{uid}',
    call: (r) => call(r, 'PATCH', `/members/${ids.analyst}`, { name: 'Analyst' }),
  },
  {
    route: 'DELETE /api/w/{wid}/members/{uid}',
    call: async (r) => {
      const spare = await app.services.people.addMember({
        workspaceId: wid,
        email: `${unique()}@acme.example`,
        password: PASSWORD,
        role: 'member',
      });
      return call(r, 'DELETE', `/members/${spare.id}`);
    },
  },
  {
    route: 'DELETE /api/w/{wid}/members/{uid}/lockout',
    call: (r) => call(r, 'DELETE', `/members/${ids.analyst}/lockout`),
  },
  // Workspace keys
  { route: 'GET /api/w/{wid}/keys', call: (r) => call(r, 'GET', '/keys') },
  {
    route: 'POST /api/w/{wid}/keys',
    call: (r) => call(r, 'POST', '/keys', { scope: 'inference', name: unique() }),
  },
  {
    route: 'DELETE /api/w/{wid}/keys/{id}',
    call: async (r) =>
      call(r, 'DELETE', `/keys/${(await app.services.keys.mint(wid, { scope: 'inference' }, 'test')).id}`),
  },
  // Agents: read per person
  {
    route: 'GET /api/w/{wid}/agents',
    call: (r) => call(r, 'GET', '/agents?limit=200'),
    check: (role, res) => {
      const seen = ids_(res);
      const everyone = ['owner', 'admin', 'auditor'].includes(role);
      if (seen.includes(ownersAgent) !== everyone) throw new Error(`${role} sees the owner's agent: ${!everyone}`);
      if (seen.includes(membersAgent) !== (everyone || role === 'member'))
        throw new Error(`${role}: the member's agent listed wrongly`);
      if (!everyone && res.body.data.some((a: { actsFor: string }) => a.actsFor !== ids[role]))
        throw new Error(`${role} sees an agent that does not act for them`);
    },
  },
  {
    route: 'POST /api/w/{wid}/agents',
    call: (r) => call(r, 'POST', '/agents', { name: unique() }),
  },
  {
    route: 'GET /api/w/{wid}/agents/{aid}',
    about: "another person's agent",
    beyond: { member: 'not_found', analyst: 'not_found' },
    call: (r) => call(r, 'GET', `/agents/${ownersAgent}`),
  },
  {
    route: 'GET /api/w/{wid}/agents/{aid}',
    about: "the member's own agent",
    beyond: { analyst: 'not_found' },
    call: (r) => call(r, 'GET', `/agents/${membersAgent}`),
    check: (role, res) => {
      if (res.body.id !== membersAgent || res.body.actsFor !== ids.member) throw new Error(`${role}: ${res.text}`);
    },
  },
  {
    route: 'PATCH /api/w/{wid}/agents/{aid}',
    about: "another person's agent",
    beyond: othersAgentWrite,
    call: (r) => call(r, 'PATCH', `/agents/${ownersAgent}`, { tags: ['t'] }),
  },
  {
    route: 'PATCH /api/w/{wid}/agents/{aid}',
    about: "the member's own agent",
    call: (r) => call(r, 'PATCH', `/agents/${membersAgent}`, { tags: ['mine'] }),
  },
  {
    route: 'DELETE /api/w/{wid}/agents/{aid}',
    about: "another person's agent",
    beyond: othersAgentWrite,
    call: async (r) => call(r, 'DELETE', `/agents/${await freshAgent()}`),
  },
  {
    route: 'GET /api/w/{wid}/agents/{aid}/keys',
    about: "another person's agent",
    beyond: othersAgentWrite,
    call: (r) => call(r, 'GET', `/agents/${ownersAgent}/keys`),
  },
  {
    route: 'GET /api/w/{wid}/agents/{aid}/keys',
    about: "the member's own agent",
    call: (r) => call(r, 'GET', `/agents/${membersAgent}/keys`),
  },
  {
    route: 'POST /api/w/{wid}/agents/{aid}/keys',
    about: "another person's agent",
    beyond: othersAgentWrite,
    call: (r) => call(r, 'POST', `/agents/${ownersAgent}/keys`, {}),
  },
  {
    route: 'POST /api/w/{wid}/agents/{aid}/keys',
    about: "the member's own agent",
    call: (r) => call(r, 'POST', `/agents/${membersAgent}/keys`, {}),
  },
  {
    route: 'DELETE /api/w/{wid}/agents/{aid}/keys/{keyId}',
    about: "another person's agent",
    beyond: othersAgentWrite,
    call: async (r) => call(r, 'DELETE', `/agents/${ownersAgent}/keys/${await freshKey(ownersAgent)}`),
  },
  {
    route: 'GET /api/w/{wid}/agents/{aid}/mandate',
    about: "another person's agent",
    beyond: othersAgentWrite,
    call: (r) => call(r, 'GET', `/agents/${ownersAgent}/mandate`),
  },
  {
    route: 'GET /api/w/{wid}/agents/{aid}/mandate',
    about: "the member's own agent",
    call: (r) => call(r, 'GET', `/agents/${membersAgent}/mandate`),
  },
  {
    route: 'PUT /api/w/{wid}/agents/{aid}/mandate',
    about: "another person's agent",
    beyond: othersAgentWrite,
    call: (r) => call(r, 'PUT', `/agents/${ownersAgent}/mandate`, { rules: [] }),
  },
  // AP2 (docs/ap2.md): trusted issuers and imports for owners; holder keys for whoever manages the agent.
  { route: 'GET /api/w/{wid}/ap2/settings', call: (r) => call(r, 'GET', '/ap2/settings') },
  { route: 'PUT /api/w/{wid}/ap2/settings', call: (r) => call(r, 'PUT', '/ap2/settings', { issuers: [] }) },
  {
    route: 'GET /api/w/{wid}/agents/{aid}/ap2/holder-key',
    about: "another person's agent",
    beyond: othersAgentWrite,
    call: (r) => call(r, 'GET', `/agents/${ownersAgent}/ap2/holder-key`),
  },
  {
    route: 'GET /api/w/{wid}/agents/{aid}/ap2/holder-key',
    about: "the member's own agent",
    call: (r) => call(r, 'GET', `/agents/${membersAgent}/ap2/holder-key`),
  },
  {
    route: 'PUT /api/w/{wid}/agents/{aid}/ap2/holder-key',
    about: "another person's agent",
    beyond: othersAgentWrite,
    call: (r) => call(r, 'PUT', `/agents/${ownersAgent}/ap2/holder-key`, { jwk: HOLDER_JWK }),
  },
  {
    route: 'PUT /api/w/{wid}/agents/{aid}/ap2/holder-key',
    about: "the member's own agent",
    call: (r) => call(r, 'PUT', `/agents/${membersAgent}/ap2/holder-key`, { jwk: HOLDER_JWK }),
  },
  {
    route: 'GET /api/w/{wid}/agents/{aid}/mandate/ap2',
    about: "another person's agent",
    beyond: othersAgentWrite,
    call: (r) => call(r, 'GET', `/agents/${ownersAgent}/mandate/ap2`),
  },
  {
    route: 'GET /api/w/{wid}/agents/{aid}/mandate/ap2',
    about: "the member's own agent",
    call: (r) => call(r, 'GET', `/agents/${membersAgent}/mandate/ap2`),
  },
  {
    // An owner gets past the role check to the credential's verification (this one is no SD-JWT).
    route: 'POST /api/w/{wid}/agents/{aid}/mandate/ap2',
    admitted: 'reached',
    call: (r) => call(r, 'POST', `/agents/${ownersAgent}/mandate/ap2`, { credential: 'not-a-credential' }),
  },
  {
    route: 'POST /api/w/{wid}/agents/{aid}/stop',
    about: "another person's agent",
    beyond: othersAgentWrite,
    call: (r) => call(r, 'POST', `/agents/${ownersAgent}/stop`, { reason: 'table' }),
    undo: () => call('owner', 'POST', `/agents/${ownersAgent}/restart`),
  },
  {
    route: 'POST /api/w/{wid}/agents/{aid}/restart',
    about: "another person's agent",
    // An auditor sees every agent, but restarts none of another's: 403 naming who may.
    beyond: { member: 'not_found', analyst: 'not_found', auditor: 'forbidden' },
    call: (r) => call(r, 'POST', `/agents/${ownersAgent}/restart`),
  },
  // Templates and blueprints
  { route: 'GET /api/w/{wid}/templates', call: (r) => call(r, 'GET', '/templates') },
  {
    route: 'POST /api/w/{wid}/templates',
    call: (r) => call(r, 'POST', '/templates', { name: unique(), rules: [{ actions: ['email'] }] }),
  },
  { route: 'GET /api/w/{wid}/blueprints', call: (r) => call(r, 'GET', '/blueprints') },
  {
    route: 'POST /api/w/{wid}/blueprints',
    call: (r) => call(r, 'POST', '/blueprints', { name: unique(), tags: ['fleet'] }),
  },
  // Approvals
  {
    route: 'GET /api/w/{wid}/approvals',
    call: (r) => call(r, 'GET', '/approvals?limit=200'),
    check: (role, res) => {
      if (ids_(res).includes(ownersApproval) !== (role !== 'member'))
        throw new Error(`${role}: the approval of another person's agent listed wrongly: ${res.text}`);
    },
  },
  {
    route: 'POST /api/w/{wid}/approvals/{apid}/approve',
    admitted: 'reached',
    call: (r) => call(r, 'POST', `/approvals/${nothing('apr')}/approve`, {}),
  },
  {
    route: 'POST /api/w/{wid}/approvals/{apid}/deny',
    admitted: 'reached',
    call: (r) => call(r, 'POST', `/approvals/${nothing('apr')}/deny`, {}),
  },
  // "Stop every agent"
  { route: 'GET /api/w/{wid}/stop-all', call: (r) => call(r, 'GET', '/stop-all') },
  {
    route: 'POST /api/w/{wid}/stop-all',
    call: (r) => call(r, 'POST', '/stop-all', { reason: 'table' }),
    undo: () => call('owner', 'DELETE', '/stop-all'),
  },
  { route: 'DELETE /api/w/{wid}/stop-all', call: (r) => call(r, 'DELETE', '/stop-all') },
  // The ledger
  {
    route: 'GET /api/w/{wid}/ledger',
    call: (r) => call(r, 'GET', '/ledger'),
  },
  {
    route: 'GET /api/w/{wid}/ledger/checkpoint',
    call: (r) => call(r, 'GET', '/ledger/checkpoint'),
  },
  {
    route: 'POST /api/w/{wid}/ledger/verify',
    call: (r) => call(r, 'POST', '/ledger/verify', {}),
  },
  // Reports: gateway usage and budgets (analysts read reports)
  {
    route: 'GET /api/w/{wid}/usage',
    call: (r) => call(r, 'GET', '/usage?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z'),
  },
  {
    route: 'GET /api/w/{wid}/budgets',
    call: (r) => call(r, 'GET', '/budgets'),
  },
  {
    route: 'POST /api/w/{wid}/budgets',
    call: (r) =>
      call(r, 'POST', '/budgets', { scope: { kind: 'team', id: unique() }, amountMicros: 1_000_000, period: 'day' }),
  },
  // Service tokens: owners only
  {
    route: 'GET /api/w/{wid}/service-tokens',
    call: (r) => call(r, 'GET', '/service-tokens'),
  },
  {
    route: 'POST /api/w/{wid}/service-tokens',
    call: (r) => call(r, 'POST', '/service-tokens', { name: unique(), scopes: ['agents:read'], expiresInDays: 7 }),
  },
  {
    route: 'DELETE /api/w/{wid}/service-tokens/{id}',
    call: async (r) => {
      const made = await app.services.serviceTokens.create(wid, {
        name: unique(),
        scopes: ['agents:read'],
        expiresInDays: 7,
      });
      return call(r, 'DELETE', `/service-tokens/${made.id}`);
    },
  },
  // OAuth connections: each person their own (owners and admins every one)
  {
    route: 'GET /api/w/{wid}/connections',
    call: (r) => call(r, 'GET', '/connections'),
  },
  {
    route: 'DELETE /api/w/{wid}/connections/{cnx}',
    admitted: 'reached',
    call: (r) => call(r, 'DELETE', `/connections/${nothing('cnx')}`),
  },
  // Gateway and MCP settings
  { route: 'GET /api/w/{wid}/gateway', call: (r) => call(r, 'GET', '/gateway') },
  {
    route: 'PUT /api/w/{wid}/gateway',
    call: (r) => call(r, 'PUT', '/gateway', { dataLoss: 'off' }),
  },
  { route: 'GET /api/w/{wid}/mcp-servers', call: (r) => call(r, 'GET', '/mcp-servers') },
  {
    route: 'POST /api/w/{wid}/mcp-servers',
    call: (r) => call(r, 'POST', '/mcp-servers', { name: unique(), url: 'https://tools.example/mcp' }),
  },
  {
    route: 'DELETE /api/w/{wid}/mcp-servers/{name}',
    admitted: 'reached',
    call: (r) => call(r, 'DELETE', '/mcp-servers/nothing-here'),
  },
  {
    route: 'PATCH /api/w/{wid}/mcp-servers/{name}',
    admitted: 'reached',
    call: (r) => call(r, 'PATCH', '/mcp-servers/nothing-here', { enabled: false }),
  },
  {
    route: 'GET /api/w/{wid}/mcp-servers/{name}/tools',
    admitted: 'reached',
    call: (r) => call(r, 'GET', '/mcp-servers/nothing-here/tools'),
  },
  {
    route: 'POST /api/w/{wid}/mcp-servers/{name}/tools/{tool}/approve',
    admitted: 'reached',
    call: (r) => call(r, 'POST', '/mcp-servers/nothing-here/tools/echo/approve', { hash: '0'.repeat(64) }),
  },
  {
    route: 'GET /api/w/{wid}/mcp-servers/{name}/credentials',
    admitted: 'reached',
    call: (r) => call(r, 'GET', '/mcp-servers/nothing-here/credentials'),
  },
  {
    route: 'PUT /api/w/{wid}/mcp-servers/{name}/credentials/agents/{agentId}',
    admitted: 'reached',
    call: (r) => call(r, 'PUT', `/mcp-servers/nothing-here/credentials/agents/${nothing('agt')}`, { secret: 's' }),
  },
  {
    route: 'DELETE /api/w/{wid}/mcp-servers/{name}/credentials/agents/{agentId}',
    admitted: 'reached',
    call: (r) => call(r, 'DELETE', `/mcp-servers/nothing-here/credentials/agents/${nothing('agt')}`),
  },
  {
    route: 'POST /api/w/{wid}/mcp-servers/{name}/connect',
    admitted: 'reached',
    call: (r) => call(r, 'POST', '/mcp-servers/nothing-here/connect', { for: { workspace: true } }),
  },
  {
    route: 'POST /api/w/{wid}/mcp-servers/{name}/disconnect',
    admitted: 'reached',
    call: (r) => call(r, 'POST', '/mcp-servers/nothing-here/disconnect', { for: { workspace: true } }),
  },
  { route: 'GET /api/w/{wid}/plan', call: (r) => call(r, 'GET', '/plan') },
  // Integrations, cards, code host
  {
    route: 'GET /api/w/{wid}/integrations',
    call: (r) => call(r, 'GET', '/integrations'),
  },
  {
    route: 'PUT /api/w/{wid}/integrations/{kind}',
    about: 'a payment provider',
    params: { kind: 'stripe' },
    call: (r) => call(r, 'PUT', '/integrations/stripe', { signingSecret: `whsec_${unique()}_secret` }),
  },
  {
    route: 'PUT /api/w/{wid}/integrations/{kind}',
    about: 'an approval channel',
    params: { kind: 'slack' },
    call: (r) => call(r, 'PUT', '/integrations/slack', { signingSecret: `slack-${unique()}-secret` }),
  },
  {
    // Whether a relay is set up or not, only an owner gets past the role check.
    route: 'POST /api/w/{wid}/integrations/chat-relay/test',
    admitted: 'reached',
    call: (r) => call(r, 'POST', '/integrations/chat-relay/test'),
  },
  ...(['issuer', 'stripe'] as const).flatMap((provider): Row[] => [
    {
      route: `GET /api/w/{wid}/${provider}/cards`,
      call: (r) => call(r, 'GET', `/${provider}/cards`),
    },
    {
      route: `PUT /api/w/{wid}/${provider}/cards/{cardId}`,
      call: (r) => call(r, 'PUT', `/${provider}/cards/card_table`, { agentId: null }),
    },
    {
      route: `GET /api/w/{wid}/${provider}/cards/{cardId}/charges`,
      call: (r) => call(r, 'GET', `/${provider}/cards/card_table/charges`),
    },
  ]),
  { route: 'GET /api/w/{wid}/github/bots', call: (r) => call(r, 'GET', '/github/bots') },
  {
    route: 'PUT /api/w/{wid}/github/bots/{login}',
    call: (r) => call(r, 'PUT', '/github/bots/table-bot', { agentId: null }),
  },
  // Approvals from chat: each person maps only their own identity
  {
    route: 'GET /api/w/{wid}/chat/users',
    call: (r) => call(r, 'GET', '/chat/users'),
  },
  {
    route: 'PUT /api/w/{wid}/chat/users/{platform}/{chatUserId}',
    call: (r) => call(r, 'PUT', `/chat/users/teams/${r}-chat`, { userId: ids[r] }),
  },
  { route: 'GET /api/w/{wid}/chat/cards', call: (r) => call(r, 'GET', '/chat/cards') },
  // Outbound webhooks
  { route: 'GET /api/w/{wid}/webhooks', call: (r) => call(r, 'GET', '/webhooks') },
  {
    route: 'POST /api/w/{wid}/webhooks',
    call: (r) => call(r, 'POST', '/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['action.decided'] }),
  },
  {
    route: 'DELETE /api/w/{wid}/webhooks/{id}',
    admitted: 'reached',
    call: (r) => call(r, 'DELETE', `/webhooks/${nothing('whk')}`),
  },
  {
    route: 'GET /api/w/{wid}/webhooks/{id}/deliveries',
    admitted: 'reached',
    call: (r) => call(r, 'GET', `/webhooks/${nothing('whk')}/deliveries`),
  },
  {
    route: 'POST /api/w/{wid}/webhooks/{id}/deliveries/{did}/redeliver',
    admitted: 'reached',
    call: (r) => call(r, 'POST', `/webhooks/${nothing('whk')}/deliveries/${nothing('dlv')}/redeliver`),
  },
];

/** The workspace routes of the server's route table, by `METHOD path`. */
const workspaceRoutes = (): Map<string, RequestRoute> =>
  new Map(
    server
      .table()
      .filter((r) => r.path.startsWith('/api/w/{wid}/'))
      .map((r) => [`${r.method.toUpperCase()} ${r.path}`, r]),
  );

/** What each role gets from a row's call: what the route's declared permission admits, and what the services decide beyond it. */
function expected(row: Row): { permission: Permission; outcomes: Record<Role, Outcome> } {
  const route = workspaceRoutes().get(row.route);
  const option: PermissionOption | undefined = route && declaredPermission(route);
  if (!option) throw new Error(`${row.route} declares no permission`);
  const permission = permissionFor(option, row.params ?? {}) as Permission;
  const outcomes = Object.fromEntries(
    ROLES.map((r) => [r, row.beyond?.[r] ?? (roleAllows(r, permission) ? (row.admitted ?? 'ok') : 'forbidden')]),
  ) as Record<Role, Outcome>;
  return { permission, outcomes };
}

test.serial('every console route of a workspace declares its permission and has a row in the table', (t) => {
  const routes = workspaceRoutes();
  t.true(routes.size > 40, `the walk found the workspace routes (${routes.size})`);
  t.deepEqual(
    [...routes].filter(([, r]) => declaredPermission(r) === undefined).map(([name]) => name),
    [],
    'routes that declare no permission (options.app.permission)',
  );
  const covered = new Set(rows.map((r) => r.route));
  t.deepEqual(
    [...routes.keys()].filter((r) => !covered.has(r)),
    [],
    'routes without a row',
  );
  t.deepEqual(
    [...covered].filter((r) => !routes.has(r)),
    [],
    'rows naming no route',
  );
  // A route whose permission depends on a path parameter: each of its rows names the parameter.
  for (const row of rows) {
    const option = routes.get(row.route)?.settings.app?.permission;
    if (option !== undefined && typeof option !== 'string')
      t.truthy(row.params?.[option.byParam], `${row.route} (${row.about ?? ''}) names {${option.byParam}}`);
  }
});

for (const row of rows) {
  const name = `${row.route}${row.about ? ` (${row.about})` : ''}`;
  test.serial(name, async (t) => {
    const { permission, outcomes } = expected(row);
    t.log(`${permission}: ${ROLES.map((r) => `${r} ${outcomes[r]}`).join(', ')}`);
    for (const role of ROLES) {
      const res = await row.call(role);
      const what = `${role} (${permission}): ${res.status} ${res.text.slice(0, 300)}`;
      switch (outcomes[role]) {
        case 'ok':
          t.true(res.status < 400, what);
          row.check?.(role, res);
          if (row.undo) await row.undo();
          break;
        case 'reached':
          t.false([401, 403].includes(res.status), what);
          break;
        case 'forbidden':
          t.is(res.status, 403, what);
          t.is(res.body?.error?.type, 'forbidden', what);
          break;
        case 'not_found':
          t.is(res.status, 404, what);
          t.is(res.body?.error?.type, 'not_found', what);
          // Nothing of the agent shows: not even whom it acts for.
          t.false(res.text.includes(ids.owner), what);
          break;
      }
    }
  });
}
