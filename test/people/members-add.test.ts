import test from 'ava';
import type { Server } from '@hapi/hapi';
import type { App } from '../../src/app.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';

/**
 * Adding a member (issue 15 item 6) does not tell whether the email already has an account on
 * this server: an email that has one (in another workspace) and one that has none get the same
 * status, the same body (echoing what was sent), the same ledger record and about the same time.
 * What the added person finds differs, as the README says: an existing account keeps its own
 * password and finds the workspace; a new one signs in with the password sent and must replace it.
 */
let running: InProcess;
let app: App;
let server: Server;
let wid: string;
let ownerCookie: string;
let otherOwnerCookie: string;
let otherWid: string;
let n = 0;
const OWNER_PASSWORD = 'owner password 123';
const THEIR_PASSWORD = 'their very own password';

test.before(async () => {
  running = await inProcessServer({ 'rateLimits.signInPerMinute': 1_000_000, 'rateLimits.publicPerMinute': 1_000_000 });
  app = running.app;
  server = running.http.server;
  await server.initialize();
  const made = await app.services.people.createWorkspace({
    name: 'Ours',
    ownerEmail: 'owner@ours.example',
    ownerPassword: OWNER_PASSWORD,
  });
  wid = made.workspaceId;
  ownerCookie = (await signIn('owner@ours.example', OWNER_PASSWORD)).cookie;
});

test.after.always(() => running?.close());

interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers read field by field
  body: any;
  cookie: string;
}

async function send(method: string, url: string, cookie: string, payload?: object): Promise<Reply> {
  const res = await server.inject({
    method,
    url,
    headers: { cookie, 'x-svc-csrf': '1' },
    ...(payload ? { payload } : {}),
  });
  return { status: res.statusCode, body: res.payload ? JSON.parse(res.payload) : undefined, cookie };
}

async function signIn(email: string, password: string): Promise<Reply> {
  const res = await server.inject({
    method: 'POST',
    url: '/api/session',
    headers: { 'x-svc-csrf': '1' },
    payload: { email, password },
  });
  const cookie = String([res.headers['set-cookie']].flat()[0] ?? '').split(';')[0]!;
  return { status: res.statusCode, body: JSON.parse(res.payload), cookie };
}

/** A person who already has an account here, as the owner of a workspace of their own. */
async function existingPerson(): Promise<{ email: string; id: string }> {
  const email = `existing${(n += 1)}@elsewhere.example`;
  const made = await app.services.people.createWorkspace({
    name: `Theirs ${n}`,
    ownerEmail: email,
    ownerName: 'Their Own Name',
    ownerPassword: THEIR_PASSWORD,
  });
  otherWid = made.workspaceId;
  otherOwnerCookie = (await signIn(email, THEIR_PASSWORD)).cookie;
  return { email, id: made.ownerId };
}
const newEmail = () => `new${(n += 1)}@nowhere.example`;

const add = (body: object) => send('POST', `/api/w/${wid}/members`, ownerCookie, body);

/** Everything of an answer but what differs between any two adds (the id and the time). */
const shape = (res: Reply) => {
  const { id, addedAt, ...rest } = res.body as Record<string, string>;
  return {
    status: res.status,
    keys: Object.keys(res.body as object).sort(),
    id: /^usr_[0-9A-Za-z]{22}$/.test(id!),
    addedAt: !Number.isNaN(Date.parse(addedAt!)),
    rest,
  };
};

test.serial(
  'an email with an account elsewhere and a new one get the same answer, with or without a password',
  async (t) => {
    for (const password of ['a chosen password 1', undefined]) {
      const existing = await existingPerson();
      const fresh = newEmail();
      const body = (email: string) => ({ email, name: 'Pat Doe', role: 'member', ...(password ? { password } : {}) });
      const a = await add(body(existing.email));
      const b = await add(body(fresh));
      t.is(a.status, 201, JSON.stringify(a.body));
      const [sa, sb] = [shape(a), shape(b)];
      t.deepEqual({ ...sa, rest: { ...sa.rest, email: '' } }, { ...sb, rest: { ...sb.rest, email: '' } });
      t.like(a.body, { email: existing.email, name: 'Pat Doe', role: 'member' });
      t.like(b.body, { email: fresh, name: 'Pat Doe', role: 'member' });
      // The members list shows them alike: the name they were added under.
      const list = (await send('GET', `/api/w/${wid}/members?limit=200`, ownerCookie)).body.data as Array<{
        id: string;
        name: string;
      }>;
      t.is(list.find((m) => m.id === a.body.id)?.name, 'Pat Doe');
      t.is(list.find((m) => m.id === b.body.id)?.name, 'Pat Doe');
      // And the ledger records them alike.
      const ledger = (await send('GET', `/api/w/${wid}/ledger?after=-1&limit=200`, ownerCookie)).body.data as Array<{
        kind: string;
        subject: string;
        data: unknown;
      }>;
      const added = (id: string) =>
        ledger.filter((r) => r.kind === 'member.added' && r.subject === id).map((r) => r.data);
      t.deepEqual(added(a.body.id), [{ role: 'member' }]);
      t.deepEqual(added(b.body.id), [{ role: 'member' }]);
    }
  },
);

test.serial('adding takes about the same time whether or not the email has an account', async (t) => {
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  for (const password of ['a chosen password 1', undefined]) {
    const times = { existing: [] as number[], fresh: [] as number[] };
    for (let i = 0; i < 11; i += 1) {
      // Interleaved, and each first in turn, so that a slow moment of the machine (or work left
      // behind by the request before) falls on both alike.
      const existing = await existingPerson();
      const pair = [
        ['existing', existing.email],
        ['fresh', newEmail()],
      ] as const;
      for (const [which, email] of i % 2 === 0 ? pair : [...pair].reverse()) {
        const started = process.hrtime.bigint();
        const res = await add({ email, name: 'Timed', role: 'analyst', ...(password ? { password } : {}) });
        times[which].push(Number(process.hrtime.bigint() - started) / 1e6);
        t.is(res.status, 201);
      }
    }
    const ratio = median(times.existing) / median(times.fresh);
    t.true(
      ratio > 0.5 && ratio < 2,
      `${password ? 'with' : 'without'} a password: medians ${median(times.existing).toFixed(1)} ms (account) and ${median(times.fresh).toFixed(1)} ms (new)`,
    );
  }
});

test.serial(
  'what the added person finds: their own password and the new workspace, or the password sent',
  async (t) => {
    const existing = await existingPerson();
    const fresh = newEmail();
    const password = 'a chosen password 2';
    for (const email of [existing.email, fresh])
      t.is((await add({ email, name: 'Sam', role: 'auditor', password })).status, 201);

    // An account that was here keeps its password: the one sent was never stored.
    t.is((await signIn(existing.email, password)).status, 401);
    const own = await signIn(existing.email, THEIR_PASSWORD);
    t.is(own.status, 200);
    t.false(own.body.user.mustChangePassword);
    t.deepEqual(
      own.body.workspaces.map((w: { id: string; role: string }) => [w.id, w.role]).sort(),
      [
        [otherWid, 'owner'],
        [wid, 'auditor'],
      ].sort(),
    );
    // Their own name stays theirs, in their account and in their other workspace.
    t.is(own.body.user.name, 'Their Own Name');

    // A new one signs in with the password sent, and must replace it before anything else.
    const first = await signIn(fresh, password);
    t.is(first.status, 200);
    t.true(first.body.user.mustChangePassword);
    t.is((await send('GET', `/api/w/${wid}/agents`, first.cookie)).status, 403);
    // Whatever the role given: an admin added with a chosen password cannot act (approve, restart,
    // be the second person of a two-person rule) under it either.
    const admin = newEmail();
    t.is((await add({ email: admin, name: 'New Admin', role: 'admin', password })).status, 201);
    const asAdmin = await signIn(admin, password);
    t.true(asAdmin.body.user.mustChangePassword);
    t.is((await send('GET', `/api/w/${wid}/agents`, asAdmin.cookie)).status, 403);
  },
);

test.serial('sent without a password, a new account has none anyone knows', async (t) => {
  const fresh = newEmail();
  const res = await add({ email: fresh, name: 'Nobody Yet', role: 'member' });
  t.is(res.status, 201);
  const stored = (await app.store.tables.users.get(res.body.id))!;
  t.true(stored.mustChangePassword);
  t.regex(stored.passwordHash, /^\$argon2id\$/);
  for (const guess of ['', 'password', fresh]) t.is((await signIn(fresh, guess)).status, guess ? 401 : 400);
});

test.serial('renaming a member renames them in this workspace only, not in another nor in their account', async (t) => {
  const existing = await existingPerson();
  const added = await add({ email: existing.email, name: 'Known Here As', role: 'member' });
  const renamed = await send('PATCH', `/api/w/${wid}/members/${added.body.id}`, ownerCookie, { name: 'Renamed Here' });
  t.is(renamed.status, 200);
  t.is(renamed.body.name, 'Renamed Here');
  const theirs = (await send('GET', `/api/w/${otherWid}/members`, otherOwnerCookie)).body.data as Array<{
    id: string;
    name: string;
  }>;
  t.is(theirs.find((m) => m.id === existing.id)?.name, 'Their Own Name');
  t.is((await signIn(existing.email, THEIR_PASSWORD)).body.user.name, 'Their Own Name');
  // A second add is refused by field: that is this workspace's own list.
  const twice = await add({ email: existing.email, name: 'x', role: 'member' });
  t.is(twice.status, 400);
  t.deepEqual(twice.body.error.errors, [
    { field: 'email', message: `"email" ${existing.email} is already a member of this workspace` },
  ]);
});
