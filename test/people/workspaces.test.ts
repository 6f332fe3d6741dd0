import test from 'ava';
import { addPerson } from '../approvals/support.js';
import { ownerConsole, type Person } from '../helpers/console.js';
import { assertError, call, csrf } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';

/**
 * A person's workspaces (the console's workspace switcher and `svc workspaces`): GET
 * /api/workspaces lists each workspace the person belongs to with their role there; POST
 * /api/workspaces makes a new one with its creator as its owner. Cross-site writes are refused;
 * without a session, nothing is told.
 */
let server: ServedInProcess;
let owner: Person;

test.before(async () => {
  server = await serveInProcess();
  owner = await ownerConsole(server);
});

test.after.always(() => stopAndClean(server));

const list = (cookie: string) => call(server.url, 'GET', '/api/workspaces', { headers: { cookie } });

test.serial(
  'a person creates a workspace: they own it, it is listed beside the first, and it starts empty',
  async (t) => {
    const before = await list(owner.cookie);
    t.is(before.status, 200, before.text);
    t.deepEqual(before.body, { data: [{ id: owner.wid, name: 'Default', role: 'owner' }], next: null });

    const made = await call(server.url, 'POST', '/api/workspaces', {
      headers: { cookie: owner.cookie, ...csrf },
      json: { name: 'Payments team' },
    });
    t.is(made.status, 201, made.text);
    t.like(made.body, { name: 'Payments team', role: 'owner' });
    t.regex(made.body.id, /^ws_/);
    const after = await list(owner.cookie);
    t.deepEqual(after.body.data.map((w: { name: string; role: string }) => [w.name, w.role]).sort(), [
      ['Default', 'owner'],
      ['Payments team', 'owner'],
    ]);
    const agents = await call(server.url, 'GET', `/api/w/${made.body.id}/agents`, {
      headers: { cookie: owner.cookie },
    });
    t.is(agents.status, 200, agents.text);
    t.deepEqual(agents.body.data, []);
  },
);

test.serial('a member lists only their own workspaces, with their role there', async (t) => {
  const member = await addPerson(server, owner.wid, 'analyst@acme.example', 'analyst');
  const res = await list(member.cookie);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data, [{ id: owner.wid, name: 'Default', role: 'analyst' }]);
});

test.serial('cross-site, nameless or signed-out requests are refused and make nothing', async (t) => {
  const count = async () => (await list(owner.cookie)).body.data.length;
  const before = await count();
  assertError(
    t,
    await call(server.url, 'POST', '/api/workspaces', { headers: { cookie: owner.cookie }, json: { name: 'X' } }),
    403,
    'csrf',
  );
  assertError(
    t,
    await call(server.url, 'POST', '/api/workspaces', { headers: { cookie: owner.cookie, ...csrf }, json: {} }),
    400,
    'invalid_request',
  );
  assertError(t, await call(server.url, 'GET', '/api/workspaces'), 401, 'unauthenticated');
  t.is(await count(), before);
});
