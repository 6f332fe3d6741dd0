import test from 'ava';
import { ownedServer } from '../helpers/tokens.js';
import { addPerson } from '../approvals/support.js';
import { assertError, call, csrf } from '../helpers/http.js';

/**
 * A person's workspaces (the console's workspace switcher and `svc workspaces`): GET
 * /api/workspaces lists each workspace the person belongs to with their role there; POST
 * /api/workspaces makes a new one with its creator as its served.owner. Cross-site writes are refused;
 * without a session, nothing is told.
 */
const served = ownedServer(test);

const list = (cookie: string) => call(served.server.url, 'GET', '/api/workspaces', { headers: { cookie } });

test.serial(
  'a person creates a workspace: they own it, it is listed beside the first, and it starts empty',
  async (t) => {
    const before = await list(served.owner.cookie);
    t.is(before.status, 200, before.text);
    t.deepEqual(before.body, { data: [{ id: served.owner.wid, name: 'Default', role: 'owner' }], next: null });

    const made = await call(served.server.url, 'POST', '/api/workspaces', {
      headers: { cookie: served.owner.cookie, ...csrf },
      json: { name: 'Payments team' },
    });
    t.is(made.status, 201, made.text);
    t.like(made.body, { name: 'Payments team', role: 'owner' });
    t.regex(made.body.id, /^ws_/);
    const after = await list(served.owner.cookie);
    t.deepEqual(after.body.data.map((w: { name: string; role: string }) => [w.name, w.role]).sort(), [
      ['Default', 'owner'],
      ['Payments team', 'owner'],
    ]);
    const agents = await call(served.server.url, 'GET', `/api/w/${made.body.id}/agents`, {
      headers: { cookie: served.owner.cookie },
    });
    t.is(agents.status, 200, agents.text);
    t.deepEqual(agents.body.data, []);
  },
);

test.serial('a member lists only their own workspaces, with their role there', async (t) => {
  const member = await addPerson(served.server, served.owner.wid, 'analyst@acme.example', 'analyst');
  const res = await list(member.cookie);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.data, [{ id: served.owner.wid, name: 'Default', role: 'analyst' }]);
});

test.serial('cross-site, nameless or signed-out requests are refused and make nothing', async (t) => {
  const count = async () => (await list(served.owner.cookie)).body.data.length;
  const before = await count();
  assertError(
    t,
    await call(served.server.url, 'POST', '/api/workspaces', {
      headers: { cookie: served.owner.cookie },
      json: { name: 'X' },
    }),
    403,
    'csrf',
  );
  assertError(
    t,
    await call(served.server.url, 'POST', '/api/workspaces', {
      headers: { cookie: served.owner.cookie, ...csrf },
      json: {},
    }),
    400,
    'invalid_request',
  );
  assertError(t, await call(served.server.url, 'GET', '/api/workspaces'), 401, 'unauthenticated');
  t.is(await count(), before);
});
