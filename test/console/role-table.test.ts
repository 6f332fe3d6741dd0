import test from 'ava';
import { ownerConsole, type Person } from '../helpers/console.js';
import type { Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { addPerson, SERVER_ENV } from '../approvals/support.js';

/**
 * The role table (SPEC.md 5.3.5, issue 4): each role allowed and refused on each console route.
 * Owners and admins manage everything; members manage the agents that act for them; analysts read
 * reports; auditors read evidence and the ledger. "Refused" is exactly 403 forbidden; "allowed" is
 * any answer but that (the route did its work).
 */
type Role = 'owner' | 'admin' | 'member' | 'analyst' | 'auditor';
const ROLES: Role[] = ['owner', 'admin', 'member', 'analyst', 'auditor'];

let server: ServedInProcess;
const people = {} as Record<Role, Person>;
let ownersAgent: string;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  people.owner = await ownerConsole(server);
  const wid = server.boot.workspaceId!;
  for (const role of ['admin', 'member', 'analyst', 'auditor'] as const)
    people[role] = await addPerson(server, wid, `${role}@acme.example`, role);
  const agent = await people.owner.send('POST', '/agents', { name: 'owners-bot', actsFor: people.owner.id });
  ownersAgent = agent.body.id;
});

test.after.always(() => stopAndClean(server));

interface Row {
  route: string;
  allowed: Role[];
  call: (p: Person) => Promise<Reply>;
  /** Puts back what an allowed call changed, so that every role meets the same state. */
  undo?: (p: Person, res: Reply) => Promise<unknown>;
}

let n = 0;
const unique = () => `x${(n += 1)}`;

const rows: Row[] = [
  { route: 'GET members', allowed: ['owner', 'admin'], call: (p) => p.get('/members') },
  {
    route: 'POST members',
    allowed: ['owner', 'admin'],
    call: (p) =>
      p.send('POST', '/members', {
        email: `${unique()}@acme.example`,
        name: 'New',
        role: 'analyst',
        password: 'a-long-password-1',
      }),
  },
  { route: 'GET keys', allowed: ['owner', 'admin'], call: (p) => p.get('/keys') },
  {
    route: 'POST keys',
    allowed: ['owner', 'admin'],
    call: (p) => p.send('POST', '/keys', { scope: 'inference', name: unique() }),
  },
  { route: 'GET agents', allowed: ROLES, call: (p) => p.get('/agents') },
  {
    route: 'POST agents',
    allowed: ['owner', 'admin', 'member'],
    call: (p) => p.send('POST', '/agents', { name: unique() }),
  },
  { route: 'GET agent', allowed: ROLES, call: (p) => p.get(`/agents/${ownersAgent}`) },
  {
    route: 'PATCH agent (of another person)',
    allowed: ['owner', 'admin'],
    call: (p) => p.send('PATCH', `/agents/${ownersAgent}`, { tags: ['t'] }),
  },
  {
    route: "GET mandate (of another person's agent)",
    allowed: ['owner', 'admin'],
    call: (p) => p.get(`/agents/${ownersAgent}/mandate`),
  },
  {
    route: "PUT mandate (of another person's agent)",
    allowed: ['owner', 'admin'],
    call: (p) => p.send('PUT', `/agents/${ownersAgent}/mandate`, { rules: [] }),
  },
  {
    route: "POST agent key (another person's agent)",
    allowed: ['owner', 'admin'],
    call: (p) => p.send('POST', `/agents/${ownersAgent}/keys`, {}),
  },
  {
    route: "POST stop (another person's agent)",
    allowed: ['owner', 'admin'],
    call: (p) => p.send('POST', `/agents/${ownersAgent}/stop`, { reason: 'table' }),
    undo: () => people.owner.send('POST', `/agents/${ownersAgent}/restart`),
  },
  {
    route: "POST restart (another person's agent)",
    allowed: ['owner', 'admin'],
    call: (p) => p.send('POST', `/agents/${ownersAgent}/restart`),
  },
  { route: 'GET templates', allowed: ROLES, call: (p) => p.get('/templates') },
  {
    route: 'POST templates',
    allowed: ['owner', 'admin'],
    call: (p) => p.send('POST', '/templates', { name: unique(), rules: [{ actions: ['email'] }] }),
  },
  { route: 'GET blueprints', allowed: ROLES, call: (p) => p.get('/blueprints') },
  { route: 'GET gateway settings', allowed: ROLES, call: (p) => p.get('/gateway') },
  { route: 'GET connections', allowed: ROLES, call: (p) => p.get('/connections') },
  { route: 'GET mcp servers', allowed: ['owner', 'admin'], call: (p) => p.get('/mcp-servers') },
  {
    route: 'POST mcp servers',
    allowed: ['owner', 'admin'],
    call: (p) => p.send('POST', '/mcp-servers', { name: unique(), url: 'https://tools.example/mcp' }),
  },
  {
    route: 'PUT gateway settings',
    allowed: ['owner', 'admin'],
    call: (p) => p.send('PUT', '/gateway', { dataLoss: 'off' }),
  },
  {
    route: 'POST blueprints',
    allowed: ['owner', 'admin'],
    call: (p) => p.send('POST', '/blueprints', { name: unique(), tags: ['fleet'] }),
  },
  { route: 'GET approvals', allowed: ['owner', 'admin', 'member'], call: (p) => p.get('/approvals') },
  { route: 'GET stop-all', allowed: ROLES, call: (p) => p.get('/stop-all') },
  {
    route: 'POST stop-all',
    allowed: ['owner', 'admin'],
    call: (p) => p.send('POST', '/stop-all', { reason: 'table' }),
    undo: () => people.owner.send('DELETE', '/stop-all'),
  },
  { route: 'DELETE stop-all', allowed: ['owner', 'admin'], call: (p) => p.send('DELETE', '/stop-all') },
  { route: 'GET ledger', allowed: ['owner', 'admin', 'auditor'], call: (p) => p.get('/ledger') },
];

for (const row of rows) {
  test.serial(`${row.route}: ${row.allowed.join(', ')} allowed; the others 403 forbidden`, async (t) => {
    for (const role of ROLES) {
      const res = await row.call(people[role]);
      if (row.allowed.includes(role)) {
        t.not(res.status, 403, `${role} must be allowed: ${res.status} ${res.text.slice(0, 200)}`);
        t.true(res.status < 400, `${role}: ${res.status} ${res.text.slice(0, 200)}`);
        if (row.undo) await row.undo(people[role], res);
      } else {
        t.is(res.status, 403, `${role} must be refused: ${res.status} ${res.text.slice(0, 200)}`);
        t.is(res.body?.error?.type, 'forbidden', `${role}`);
      }
    }
  });
}
