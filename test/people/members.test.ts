import test from 'ava';
import { assertError, call, csrf, signIn } from '../helpers/http.js';
import { consoleClient, expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';

/**
 * The members routes, through a real server and real cookies: who may list,
 * add, change and remove members; only owners make owners; a workspace keeps an owner; removing a
 * member ends their sessions at once and takes the workspace from them, not their account.
 */

type Role = 'owner' | 'admin' | 'member' | 'analyst' | 'auditor';

let server: ServedInProcess;
let owner: Person;
let admin: Person;
const readers: Record<'member' | 'analyst' | 'auditor', Person> = {} as never;
let counter = 0;

/** A fresh email for each person a test adds, so that concurrent tests never share one. */
const freshEmail = (what: string) => `${what}-${(counter += 1)}@example.com`;
const passwordOf = (email: string) => `pw-${email}-long-enough`;
/** The password the adding person chooses; the new member must replace it at first sign-in. */
const chosenFor = new Set<string>();
const claimed = new Set<string>();
const initialOf = (email: string) => {
  chosenFor.add(email);
  return `initial-${email}-chosen-by-another`;
};

/**
 * Signs a person in with their own password, replacing the one they were given first (a person
 * added in the console with a password chosen for them must change it before anything else).
 */
async function signInAs(email: string): Promise<string> {
  if (chosenFor.has(email) && !claimed.has(email)) {
    claimed.add(email);
    const first = await signIn(server.url, email, initialOf(email));
    const changed = await call(server.url, 'PUT', '/api/me/password', {
      headers: { ...csrf, cookie: first },
      json: { currentPassword: initialOf(email), newPassword: passwordOf(email) },
    });
    if (changed.status !== 200) throw new Error(`password change: ${changed.status} ${changed.text}`);
  }
  return signIn(server.url, email, passwordOf(email));
}

/** Adds a new person through POST /members as `by`, and signs them in. */
async function addPerson(by: Person, role: Role, what: string = role): Promise<Person> {
  const email = freshEmail(what);
  const res = expectStatus(
    await by.send('POST', '/members', { email, name: what, role, password: initialOf(email) }),
    201,
    `add ${role}`,
  );
  return { ...consoleClient(server, by.wid, await signInAs(email)), id: res.body.id };
}

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000', SVC_PUBLIC_RATE_PER_MINUTE: '100000' } });
  owner = await ownerConsole(server);
  admin = await addPerson(owner, 'admin');
  readers.member = await addPerson(owner, 'member');
  readers.analyst = await addPerson(owner, 'analyst');
  readers.auditor = await addPerson(owner, 'auditor');
});

test.after.always(() => stopAndClean(server));

const ID = /^usr_[0-9A-Za-z]{22}$/;

test('an owner adds a new person: 201 with the member record, and they can sign in to the workspace', async (t) => {
  const email = freshEmail('new');
  const res = await owner.send('POST', '/members', {
    email,
    name: 'New Person',
    role: 'member',
    password: initialOf(email),
  });
  t.is(res.status, 201, res.text);
  t.deepEqual(Object.keys(res.body).sort(), ['addedAt', 'email', 'id', 'name', 'role']);
  t.like(res.body, { email, name: 'New Person', role: 'member' });
  t.regex(res.body.id, ID);
  t.false(Number.isNaN(Date.parse(res.body.addedAt)));

  const cookie = await signInAs(email);
  const me = await call(server.url, 'GET', '/api/me', { headers: { cookie } });
  t.is(me.status, 200);
  t.is(me.body.user.id, res.body.id);
  t.deepEqual(me.body.workspaces, [{ id: owner.wid, name: 'Default', role: 'member' }]);
});

test('owners and admins list the members, page by page', async (t) => {
  for (const who of [owner, admin]) {
    const all = await who.get('/members?limit=200');
    t.is(all.status, 200, all.text);
    t.is(all.body.next, null);
    const byId = new Map(all.body.data.map((m: { id: string }) => [m.id, m]));
    t.like(byId.get(owner.id), { id: owner.id, email: 'admin@localhost', role: 'owner' });
    t.like(byId.get(admin.id), { id: admin.id, role: 'admin' });
    t.like(byId.get(readers.auditor.id), { id: readers.auditor.id, role: 'auditor', name: 'auditor' });
    for (const m of all.body.data) {
      t.deepEqual(Object.keys(m).sort(), ['addedAt', 'email', 'id', 'lockedUntil', 'name', 'role', 'twoFactor']);
      t.like(m, { twoFactor: false, lockedUntil: null });
    }

    // Page by two, following `next`: none twice, and everyone who stays (other tests add and
    // remove people meanwhile).
    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page = await who.get(`/members?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      t.is(page.status, 200, page.text);
      t.true(page.body.data.length <= 2);
      seen.push(...page.body.data.map((m: { id: string }) => m.id));
      cursor = page.body.next;
    }
    t.is(new Set(seen).size, seen.length);
    for (const stays of [owner, admin, ...Object.values(readers)]) t.true(seen.includes(stays.id));
  }
});

test('members, analysts and auditors are refused every members route with 403 forbidden', async (t) => {
  const target = await addPerson(owner, 'member', 'target');
  const tried: string[] = [];
  for (const [role, who] of Object.entries(readers)) {
    const email = freshEmail(`by-${role}`);
    tried.push(email);
    const answers = [
      await who.get('/members'),
      await who.send('POST', '/members', { email, name: 'x', role: 'member', password: initialOf(email) }),
      await who.send('PATCH', `/members/${target.id}`, { role: 'admin' }),
      await who.send('DELETE', `/members/${target.id}`),
    ];
    for (const res of answers) {
      assertError(t, res, 403, 'forbidden');
      t.is(res.body.error.message, `Only owner or admin may do this; you are ${role}.`);
    }
  }
  const list = await owner.get('/members?limit=200');
  t.like(
    list.body.data.find((m: { id: string }) => m.id === target.id),
    { role: 'member' },
  );
  // Only the people these refused requests named (other tests of this file add members meanwhile).
  t.false(list.body.data.some((m: { email: string }) => tried.includes(m.email)));
  t.is((await target.get('/agents')).status, 200, 'the target is still a member, signed in');
});

test('an admin adds, renames, changes and removes members below owner', async (t) => {
  const email = freshEmail('by-admin');
  const added = await admin.send('POST', '/members', {
    email,
    name: 'Added',
    role: 'analyst',
    password: initialOf(email),
  });
  t.is(added.status, 201, added.text);
  t.like(added.body, { email, role: 'analyst', name: 'Added' });

  const changed = await admin.send('PATCH', `/members/${added.body.id}`, { role: 'admin', name: 'Renamed' });
  t.is(changed.status, 200, changed.text);
  t.deepEqual(changed.body, { ...added.body, role: 'admin', name: 'Renamed' });

  const removed = await admin.send('DELETE', `/members/${added.body.id}`);
  t.is(removed.status, 200, removed.text);
  t.deepEqual(removed.body, {});
  const list = await admin.get('/members?limit=200');
  t.false(list.body.data.some((m: { id: string }) => m.id === added.body.id));
});

test('only an owner makes an owner, and only an owner changes or removes one', async (t) => {
  const email = freshEmail('would-be-owner');
  const byAdmin = await admin.send('POST', '/members', { email, name: 'x', role: 'owner', password: initialOf(email) });
  assertError(t, byAdmin, 403, 'forbidden');
  t.is(byAdmin.body.error.message, 'Only an owner may make someone an owner; you are admin.');

  const someone = await addPerson(owner, 'member', 'promoted');
  const promote = await admin.send('PATCH', `/members/${someone.id}`, { role: 'owner' });
  assertError(t, promote, 403, 'forbidden');
  t.is(promote.body.error.message, 'Only an owner may make someone an owner; you are admin.');

  const byOwner = await owner.send('PATCH', `/members/${someone.id}`, { role: 'owner' });
  t.is(byOwner.status, 200, byOwner.text);
  t.is(byOwner.body.role, 'owner');
  t.deepEqual((await call(server.url, 'GET', '/api/me', { headers: { cookie: someone.cookie } })).body.workspaces, [
    { id: owner.wid, name: 'Default', role: 'owner' },
  ]);

  const demote = await admin.send('PATCH', `/members/${someone.id}`, { role: 'member' });
  assertError(t, demote, 403, 'forbidden');
  t.is(demote.body.error.message, 'Only an owner may change an owner; you are admin.');
  const rename = await admin.send('PATCH', `/members/${someone.id}`, { name: 'Nope' });
  assertError(t, rename, 403, 'forbidden');
  const remove = await admin.send('DELETE', `/members/${someone.id}`);
  assertError(t, remove, 403, 'forbidden');
  t.is(remove.body.error.message, 'Only an owner may remove an owner; you are admin.');

  const added = await owner.send('POST', '/members', {
    email,
    name: 'Owner Two',
    role: 'owner',
    password: initialOf(email),
  });
  t.is(added.status, 201, added.text);
  t.is(added.body.role, 'owner');
  const list = await owner.get('/members?limit=200');
  t.like(
    list.body.data.find((m: { id: string }) => m.id === someone.id),
    { role: 'owner', name: 'promoted' },
  );
});

test('the last owner can be neither removed nor demoted: 409 second_owner_required', async (t) => {
  const email = freshEmail('sole-owner');
  const made = await withStore(server.dataDir, (app) =>
    app.services.people.createWorkspace({ name: 'Solo', ownerEmail: email, ownerPassword: passwordOf(email) }),
  );
  const sole = consoleClient(server, made.workspaceId, await signInAs(email));

  for (const res of [
    await sole.send('DELETE', `/members/${made.ownerId}`),
    await sole.send('PATCH', `/members/${made.ownerId}`, { role: 'admin' }),
  ]) {
    assertError(t, res, 409, 'second_owner_required');
    t.regex(res.body.error.message, /last owner cannot be (removed|demoted): another owner must exist first/);
    t.is(res.body.error.fix, 'Add or promote another person to owner first, then retry.');
  }
  const members = await sole.get('/members');
  t.deepEqual(
    members.body.data.map((m: { id: string; role: string }) => [m.id, m.role]),
    [[made.ownerId, 'owner']],
  );

  // With a second owner, the first may step down, and then the second is the last.
  const secondEmail = freshEmail('second-owner');
  const second = expectStatus(
    await sole.send('POST', '/members', {
      email: secondEmail,
      name: 'Second',
      role: 'owner',
      password: initialOf(secondEmail),
    }),
    201,
    'second owner',
  );
  const down = await sole.send('PATCH', `/members/${made.ownerId}`, { role: 'admin' });
  t.is(down.status, 200, down.text);
  t.is(down.body.role, 'admin');
  const secondClient = consoleClient(server, made.workspaceId, await signInAs(secondEmail));
  assertError(t, await secondClient.send('DELETE', `/members/${second.body.id}`), 409, 'second_owner_required');
});

test('removing a member ends every session of theirs at once; they keep their account and other workspaces', async (t) => {
  const leaving = await addPerson(owner, 'member', 'leaving');
  const email = (await call(server.url, 'GET', '/api/me', { headers: { cookie: leaving.cookie } })).body.user
    .email as string;
  const secondCookie = await signInAs(email);
  // A second workspace they also belong to.
  const otherEmail = freshEmail('other-owner');
  const other = await withStore(server.dataDir, (app) =>
    app.services.people.createWorkspace({
      name: 'Elsewhere',
      ownerEmail: otherEmail,
      ownerPassword: passwordOf(otherEmail),
    }),
  );
  const otherOwner = consoleClient(server, other.workspaceId, await signInAs(otherEmail));
  expectStatus(
    await otherOwner.send('POST', '/members', { email, name: 'ignored', role: 'analyst' }),
    201,
    'add to the other workspace',
  );
  t.is((await leaving.get('/agents')).status, 200);

  const res = await owner.send('DELETE', `/members/${leaving.id}`);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, {});

  for (const cookie of [leaving.cookie, secondCookie]) {
    assertError(t, await call(server.url, 'GET', '/api/me', { headers: { cookie } }), 401, 'unauthenticated');
  }
  assertError(t, await leaving.get('/agents'), 401, 'unauthenticated');

  // Their account stays: they sign in again, and see only the other workspace.
  const again = await signInAs(email);
  const me = await call(server.url, 'GET', '/api/me', { headers: { cookie: again } });
  t.is(me.status, 200);
  t.deepEqual(me.body.workspaces, [{ id: other.workspaceId, name: 'Elsewhere', role: 'analyst' }]);
  const reading = await call(server.url, 'GET', `/api/w/${owner.wid}/agents`, { headers: { cookie: again } });
  assertError(t, reading, 404, 'not_found');
  t.false((await owner.get('/members?limit=200')).body.data.some((m: { id: string }) => m.id === leaving.id));
  assertError(t, await owner.send('DELETE', `/members/${leaving.id}`), 404, 'not_found');
});

test('adding an existing person answers as for a new one: their own password stays theirs; a second add is 400 naming email', async (t) => {
  const email = freshEmail('existing');
  const made = await withStore(server.dataDir, (app) =>
    app.services.people.createWorkspace({
      name: 'Theirs',
      ownerEmail: email,
      ownerName: 'Existing One',
      ownerPassword: passwordOf(email),
    }),
  );

  // A password sent for them is not refused (that would say they have an account): it is
  // ignored, never stored.
  const added = await owner.send('POST', '/members', {
    email: email.toUpperCase(),
    name: 'Another Name',
    role: 'auditor',
    password: 'someone-elses-choice',
  });
  t.is(added.status, 201, added.text);
  t.deepEqual(Object.keys(added.body).sort(), ['addedAt', 'email', 'id', 'name', 'role']);
  t.like(added.body, { id: made.ownerId, email: email.toUpperCase(), name: 'Another Name', role: 'auditor' });
  const sign = await call(server.url, 'POST', '/api/session', {
    headers: csrf,
    json: { email, password: 'someone-elses-choice' },
  });
  assertError(t, sign, 401, 'unauthenticated');
  // Their own password still works, and they now see both workspaces.
  const cookie = await signInAs(email);
  const me = await call(server.url, 'GET', '/api/me', { headers: { cookie } });
  t.deepEqual(
    me.body.workspaces.map((w: { id: string; role: string }) => [w.id, w.role]).sort(),
    [
      [made.workspaceId, 'owner'],
      [owner.wid, 'auditor'],
    ].sort(),
  );

  const twice = await owner.send('POST', '/members', { email, name: 'x', role: 'member' });
  assertError(t, twice, 400, 'invalid_request');
  t.deepEqual(twice.body.error.errors, [
    { field: 'email', message: `"email" ${email} is already a member of this workspace` },
  ]);
});

test('a password sent for a new person is at least 12 characters; without one, no one can sign in to the account', async (t) => {
  const email = freshEmail('nopass');
  const short = await owner.send('POST', '/members', { email, name: 'x', role: 'member', password: 'short-pw' });
  assertError(t, short, 400, 'invalid_request');
  t.deepEqual(
    short.body.error.errors.map((e: { field: string }) => e.field),
    ['password'],
  );
  t.regex(short.body.error.message, /"password" length must be at least 12 characters long/);
  const sign = await call(server.url, 'POST', '/api/session', { headers: csrf, json: { email, password: 'short-pw' } });
  assertError(t, sign, 401, 'unauthenticated');

  const none = await owner.send('POST', '/members', { email, name: 'x', role: 'member' });
  t.is(none.status, 201, none.text);
  const guess = await call(server.url, 'POST', '/api/session', {
    headers: csrf,
    json: { email, password: 'a-long-guess-of-it' },
  });
  assertError(t, guess, 401, 'unauthenticated');
});

test('validation errors name every field at fault', async (t) => {
  const bad = await owner.send('POST', '/members', { email: 'not an email', role: 'superuser', password: 12 });
  assertError(t, bad, 400, 'invalid_request');
  t.deepEqual(bad.body.error.errors.map((e: { field: string }) => e.field).sort(), [
    'email',
    'name',
    'password',
    'role',
  ]);

  const target = await addPerson(owner, 'analyst', 'patched');
  const empty = await owner.send('PATCH', `/members/${target.id}`, {});
  assertError(t, empty, 400, 'invalid_request');
  t.is(empty.body.error.errors.length, 1);
  t.regex(empty.body.error.errors[0].message, /at least one of \[role, name\]/);
  const badRole = await owner.send('PATCH', `/members/${target.id}`, { role: 'root', name: '' });
  assertError(t, badRole, 400, 'invalid_request');
  t.deepEqual(badRole.body.error.errors.map((e: { field: string }) => e.field).sort(), ['name', 'role']);
  const extra = await owner.send('PATCH', `/members/${target.id}`, { email: 'x@example.com' });
  assertError(t, extra, 400, 'invalid_request');
  t.true(extra.body.error.errors.some((e: { field: string }) => e.field === 'email'));

  assertError(t, await owner.send('PATCH', '/members/usr_0000000000000000000000', { role: 'admin' }), 404, 'not_found');
  assertError(t, await owner.send('DELETE', '/members/usr_0000000000000000000000'), 404, 'not_found');
  const badQuery = await owner.get('/members?limit=0');
  assertError(t, badQuery, 400, 'invalid_request');
  t.is(badQuery.body.error.errors[0].field, 'query.limit');
});

test("another workspace's members are not found, and writes to them need the CSRF header", async (t) => {
  const email = freshEmail('outsider');
  const made = await withStore(server.dataDir, (app) =>
    app.services.people.createWorkspace({ name: 'Outside', ownerEmail: email, ownerPassword: passwordOf(email) }),
  );
  const outsider = consoleClient(server, made.workspaceId, await signInAs(email));
  const peek = await call(server.url, 'GET', `/api/w/${owner.wid}/members`, { headers: { cookie: outsider.cookie } });
  assertError(t, peek, 404, 'not_found');
  t.is(peek.body.error.message, 'No such workspace.');
  // An owner of this workspace cannot touch a member of another one by id.
  assertError(t, await owner.send('DELETE', `/members/${made.ownerId}`), 404, 'not_found');
  assertError(t, await owner.send('PATCH', `/members/${made.ownerId}`, { role: 'member' }), 404, 'not_found');

  const noCsrf = await call(server.url, 'DELETE', `/api/w/${owner.wid}/members/${readers.analyst.id}`, {
    headers: { cookie: owner.cookie },
  });
  assertError(t, noCsrf, 403, 'csrf');
  t.is((await readers.analyst.get('/agents')).status, 200, 'still a member');
});

test('a person added with a password someone else chose must replace it before anything else', async (t) => {
  const email = freshEmail('fresh-hire');
  t.is(
    (await owner.send('POST', '/members', { email, name: 'Fresh', role: 'admin', password: initialOf(email) })).status,
    201,
  );
  const cookie = await signIn(server.url, email, initialOf(email));
  const me = await call(server.url, 'GET', '/api/me', { headers: { cookie } });
  t.true(me.body.user.mustChangePassword);
  const refused = await call(server.url, 'GET', `/api/w/${owner.wid}/members`, { headers: { cookie } });
  assertError(t, refused, 403, 'forbidden');
  t.regex(refused.body.error.message, /one-time password/);
});
