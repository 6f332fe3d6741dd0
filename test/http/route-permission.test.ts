import test from 'ava';
import fc from 'fast-check';
import type { Server } from '@hapi/hapi';
import { permissionFor, type PermissionOption } from '../../src/http/auth/permission.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';

/**
 * The permission a console route declares (`options.app.permission`), checked in one place
 * (src/http/auth/permission.ts): after the request is validated (a malformed one is 400 before any
 * role is read), a workspace the person is not in is 404 before a role's 403, and a route that
 * declares a permission it cannot check is refused when it is added. Which role may do what,
 * route by route, is the role table's (test/console/role-table.test.ts).
 */

let running: InProcess;
let server: Server;
/** The owner's workspace, and a workspace where the owner's analyst is only an analyst. */
let wid: string;
let otherWid: string;
const cookies = {} as Record<'owner' | 'analyst' | 'stranger', string>;
const PASSWORD = 'route permission password 1';

async function signIn(email: string): Promise<string> {
  const res = await server.inject({
    method: 'POST',
    url: '/api/session',
    headers: { 'x-svc-csrf': '1' },
    payload: { email, password: PASSWORD },
  });
  if (res.statusCode !== 200) throw new Error(`sign-in ${email}: ${res.payload}`);
  return String([res.headers['set-cookie']].flat()[0]).split(';')[0]!;
}

test.before(async () => {
  running = await inProcessServer({ 'rateLimits.signInPerMinute': 1_000_000 });
  server = running.http.server;
  const { people } = running.app.services;
  const made = await people.createWorkspace({
    name: 'Mine',
    ownerEmail: 'owner@acme.example',
    ownerPassword: PASSWORD,
  });
  wid = made.workspaceId;
  await people.addMember({ workspaceId: wid, email: 'analyst@acme.example', password: PASSWORD, role: 'analyst' });
  otherWid = (
    await people.createWorkspace({ name: 'Theirs', ownerEmail: 'stranger@acme.example', ownerPassword: PASSWORD })
  ).workspaceId;
  await server.initialize();
  cookies.owner = await signIn('owner@acme.example');
  cookies.analyst = await signIn('analyst@acme.example');
  cookies.stranger = await signIn('stranger@acme.example');
});

test.after.always(() => running?.close());

/** An answer's JSON body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- error bodies, read field by field
const body = (res: { payload: string }): any => JSON.parse(res.payload);

const mint = (who: keyof typeof cookies, workspace: string, payload: unknown) =>
  server.inject({
    method: 'POST',
    url: `/api/w/${workspace}/keys`,
    headers: { cookie: cookies[who], 'x-svc-csrf': '1' },
    payload: payload as object,
  });

test('a malformed body is 400 before anyone’s role is read, also in a workspace the person is not in', async (t) => {
  for (const who of ['owner', 'analyst', 'stranger'] as const) {
    const res = await mint(who, wid, { scope: 'no-such-scope' });
    t.is(res.statusCode, 400, `${who}: ${res.payload}`);
    t.is(body(res).error.type, 'invalid_request');
  }
});

test('a workspace the person is not in, or one that does not exist, is 404 not_found; a role the permission does not admit is 403 forbidden', async (t) => {
  const valid = { scope: 'inference', name: 'k' };
  const notIn = await mint('stranger', wid, valid);
  t.is(notIn.statusCode, 404, notIn.payload);
  t.is(body(notIn).error.type, 'not_found');
  const none = await mint('owner', `ws_${'0'.repeat(22)}`, valid);
  t.is(none.statusCode, 404, none.payload);
  t.is(body(none).error.type, 'not_found');
  const analyst = await mint('analyst', wid, valid);
  t.is(analyst.statusCode, 403, analyst.payload);
  t.is(body(analyst).error.type, 'forbidden');
  t.is(body(analyst).error.message, 'Only owner or admin may do this; you are analyst.');
  // The owner of one workspace is nobody in another.
  const elsewhere = await mint('owner', otherWid, valid);
  t.is(elsewhere.statusCode, 404, elsewhere.payload);
  const owner = await mint('owner', wid, valid);
  t.is(owner.statusCode, 201, owner.payload);
});

test('a route that declares a permission it cannot check is refused when it is added', (t) => {
  const handler = () => ({});
  const session = { strategies: ['session'] };
  t.throws(
    () =>
      server.route({
        method: 'GET',
        path: '/api/no-workspace',
        options: { auth: session, app: { permission: 'workspace.read' } },
        handler,
      }),
    { message: /has no \{wid\} in its path/ },
  );
  t.throws(
    () =>
      server.route({
        method: 'GET',
        path: '/api/w/{wid}/by-key',
        options: { auth: 'workspace-key', app: { permission: 'workspace.read' } },
        handler,
      }),
    { message: /does not take the session cookie alone/ },
  );
  t.throws(
    () =>
      server.route({
        method: 'GET',
        path: '/api/w/{wid}/things',
        options: {
          auth: session,
          app: { permission: { byParam: 'kind', of: {}, otherwise: 'workspace.read' } },
        },
        handler,
      }),
    { message: /decides its permission by \{kind\}, which its path lacks/ },
  );
});

test('a permission decided by a path parameter: the parameter’s own, else the route’s default', (t) => {
  const option: PermissionOption = {
    byParam: 'kind',
    of: { slack: 'integrations.approvalChannels', ssf: 'integrations.identityProvider' },
    otherwise: 'integrations.manage',
  };
  t.is(permissionFor('keys.manage', { kind: 'slack' }), 'keys.manage');
  t.is(permissionFor(option, { kind: 'slack' }), 'integrations.approvalChannels');
  t.is(permissionFor(option, { kind: 'ssf' }), 'integrations.identityProvider');
  fc.assert(
    fc.property(fc.string(), (kind) => {
      const named = kind === 'slack' || kind === 'ssf';
      return permissionFor(option, { kind }) === (named ? option.of[kind] : 'integrations.manage');
    }),
  );
  t.is(permissionFor(option, {}), 'integrations.manage');
});
