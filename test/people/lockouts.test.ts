import test, { type ExecutionContext } from 'ava';
import { Secret, TOTP } from 'otpauth';
import type { Server } from '@hapi/hapi';
import { createApp, type App } from '../../src/app.js';
import { createHttpServer } from '../../src/server.js';
import { createLogger } from '../../src/lib/log.js';
import { loadSettings } from '../../src/settings/load.js';
import { removeDir, tempDir } from '../helpers/process.js';

/**
 * Per-account lockouts (issue 15 item 6): wrong current passwords on `PUT /api/me/password` and
 * wrong two-factor codes (sign-in, confirm, turn off) are counted per account, from any address;
 * the fifth in a row locks that kind: `429 account_locked` with `lockout`, `lockedUntil` and
 * `retry-after`, even for the right answer, until it runs out (15 minutes, doubling while the
 * lockouts keep coming) or an owner lifts it (`DELETE /api/w/{wid}/members/{uid}/lockout`,
 * ledger-recorded; never one's own). The counts live in the store: a second instance on the same
 * store sees them. Time is the test's own clock; nothing sleeps.
 */
const T0 = Date.parse('2026-03-02T09:00:00.000Z');
const clock = { ms: T0, now: () => clock.ms };
const MIN = 60_000;
const PASSWORD = 'the right password 1';

let dir: string;
let app: App;
let server: Server;
let wid: string;
let ownerId: string;
let n = 0;

async function openApp(): Promise<{ app: App; server: Server }> {
  const settings = loadSettings({
    env: {},
    overrides: {
      dataDir: dir,
      'server.port': 0,
      'load.sampleIntervalMs': 0,
      'rateLimits.signInPerMinute': 1_000_000,
      'rateLimits.publicPerMinute': 1_000_000,
    },
  });
  const opened = await createApp(settings, { log: createLogger('silent'), clock });
  const http = await createHttpServer(opened);
  await http.server.initialize();
  return { app: opened, server: http.server };
}

test.before(async () => {
  dir = await tempDir('svc-lockouts-');
  ({ app, server } = await openApp());
  const made = await app.services.people.createWorkspace({
    name: 'Locks',
    ownerEmail: 'owner@locks.example',
    ownerPassword: PASSWORD,
  });
  wid = made.workspaceId;
  ownerId = made.ownerId;
});

test.after.always(async () => {
  await server?.stop();
  await app?.close();
  await removeDir(dir);
});

interface Reply {
  status: number;
  headers: Record<string, unknown>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers read field by field
  body: any;
}

async function send(
  on: Server,
  method: string,
  url: string,
  options: { cookie?: string; payload?: object; from?: string } = {},
): Promise<Reply> {
  const res = await on.inject({
    method,
    url,
    headers: { 'x-svc-csrf': '1', ...(options.cookie ? { cookie: options.cookie } : {}) },
    remoteAddress: options.from ?? '127.0.0.1',
    ...(options.payload ? { payload: options.payload } : {}),
  });
  return { status: res.statusCode, headers: res.headers, body: res.payload ? JSON.parse(res.payload) : undefined };
}

async function signIn(
  email: string,
  password: string,
  totp?: string,
  on = server,
): Promise<Reply & { cookie: string }> {
  const res = await on.inject({
    method: 'POST',
    url: '/api/session',
    headers: { 'x-svc-csrf': '1' },
    payload: { email, password, ...(totp ? { totp } : {}) },
  });
  const cookie = String([res.headers['set-cookie']].flat()[0] ?? '').split(';')[0]!;
  return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.payload), cookie };
}

/** A new member of the workspace, signed in. */
async function person(
  role: 'member' | 'owner' | 'admin' = 'member',
): Promise<{ id: string; email: string; cookie: string }> {
  const email = `p${(n += 1)}@locks.example`;
  const added = await app.services.people.addMember({ workspaceId: wid, email, password: PASSWORD, role });
  return { id: added.id, email, cookie: (await signIn(email, PASSWORD)).cookie };
}

const changePassword = (cookie: string, currentPassword: string, from?: string, on = server) =>
  send(on, 'PUT', '/api/me/password', {
    cookie,
    payload: { currentPassword, newPassword: `a new password ${(n += 1)}` },
    ...(from ? { from } : {}),
  });

function assertLocked(t: ExecutionContext, res: Reply, lockout: string, until: number): void {
  t.is(res.status, 429, JSON.stringify(res.body));
  t.like(res.body.error, { type: 'account_locked', lockout, lockedUntil: new Date(until).toISOString() });
  t.regex(res.body.error.message, new RegExp(new Date(until).toISOString()));
  t.regex(res.body.error.fix, /owner/);
  t.is(res.headers['retry-after'], String(Math.ceil((until - clock.ms) / 1000)));
}

async function ledger(kind: string) {
  const res = await send(server, 'GET', `/api/w/${wid}/ledger?after=-1&limit=200`, {
    cookie: (await signIn('owner@locks.example', PASSWORD)).cookie,
  });
  return (
    res.body.data as Array<{ kind: string; subject: string; actor: string; data: Record<string, unknown> }>
  ).filter((r) => r.kind === kind);
}

test.serial(
  'wrong current passwords from many addresses lock password changes for that account: the error says until when',
  async (t) => {
    const p = await person();
    for (let i = 1; i <= 4; i += 1) {
      const res = await changePassword(p.cookie, 'not it at all', `10.0.0.${i}`);
      t.is(res.status, 400);
      t.like(res.body.error, { type: 'invalid_request', attemptsLeft: 5 - i });
      t.is(res.body.error.errors[0].field, 'currentPassword');
    }
    const until = clock.ms + 15 * MIN;
    assertLocked(t, await changePassword(p.cookie, 'not it either', '10.0.0.5'), 'password', until);
    // The right password is not even checked while locked.
    assertLocked(t, await changePassword(p.cookie, PASSWORD, '10.0.0.6'), 'password', until);
    const records = (await ledger('member.locked_out')).filter((r) => r.subject === p.id);
    t.deepEqual(
      records.map((r) => [r.actor, r.data]),
      [['system', { lockout: 'password', lockedUntil: new Date(until).toISOString(), failures: 5 }]],
    );
    // Signing in is another kind: not locked.
    t.is((await signIn(p.email, PASSWORD)).status, 200);

    clock.ms = until;
    const changed = await changePassword(p.cookie, PASSWORD);
    t.is(changed.status, 200, JSON.stringify(changed.body));
  },
);

test.serial('lockouts in a row last twice as long each time; a right answer starts over', async (t) => {
  const p = await person();
  const lockFor = async (minutes: number) => {
    for (let i = 0; i < 4; i += 1) t.is((await changePassword(p.cookie, 'wrong')).status, 400);
    assertLocked(t, await changePassword(p.cookie, 'wrong'), 'password', clock.ms + minutes * MIN);
    clock.ms += minutes * MIN;
  };
  await lockFor(15);
  await lockFor(30);
  await lockFor(60);
  const stored = async () => ((await app.store.tables.users.get(p.id)) as { attempts?: unknown }).attempts;
  t.like(await stored(), { password: { failures: 5, locks: 3 } });
  const right = await changePassword(p.cookie, PASSWORD);
  t.is(right.status, 200, JSON.stringify(right.body));
  t.is(await stored(), undefined, 'the right answer cleared the count and the doubling');
});

test.serial('a burst of wrong guesses sent at once cannot outrun the count', async (t) => {
  const p = await person();
  const answers = await Promise.all(
    Array.from({ length: 12 }, (_, i) => changePassword(p.cookie, `guess ${i}`, `10.1.0.${i + 1}`)),
  );
  t.is(answers.filter((a) => a.status === 400).length, 4, 'only four guesses were checked and answered wrong');
  t.is(answers.filter((a) => a.status === 429).length, 8);
  t.true(answers.every((a) => a.status === 400 || a.body.error.type === 'account_locked'));
  clock.ms += 15 * MIN;
});

test.serial(
  'wrong two-factor codes at sign-in lock two-factor for that account; an owner lifts it, recorded in the ledger',
  async (t) => {
    const p = await person();
    const { secret } = (await send(server, 'POST', '/api/me/totp', { cookie: p.cookie })).body as { secret: string };
    const totp = new TOTP({ secret: Secret.fromBase32(secret) });
    const code = (offset = 0) => totp.generate({ timestamp: clock.ms + offset });
    t.is(
      (await send(server, 'POST', '/api/me/totp/confirm', { cookie: p.cookie, payload: { code: code() } })).status,
      200,
    );
    clock.ms += 60_000;
    const valid = new Set([-30_000, 0, 30_000].map(code));
    const wrong = ['000000', '111111', '222222', '333333'].find((c) => !valid.has(c))!;

    // Without a code, sign-in only asks for one: not an attempt.
    for (let i = 0; i < 6; i += 1) t.is((await signIn(p.email, PASSWORD)).body.error.type, 'totp_required');
    for (let i = 1; i <= 4; i += 1) {
      const res = await signIn(p.email, PASSWORD, wrong);
      t.is(res.status, 401);
      t.like(res.body.error, { type: 'totp_required', attemptsLeft: 5 - i });
    }
    const until = clock.ms + 15 * MIN;
    assertLocked(t, await signIn(p.email, PASSWORD, wrong), 'totp', until);
    assertLocked(t, await signIn(p.email, PASSWORD, code()), 'totp', until);
    // A wrong password still answers as a wrong password: the lockout shows only to whoever has it.
    t.is((await signIn(p.email, 'not the password', code())).body.error.type, 'unauthenticated');
    // Turning two-factor off needs a code: locked too.
    assertLocked(
      t,
      await send(server, 'DELETE', '/api/me/totp', { cookie: p.cookie, payload: { code: code() } }),
      'totp',
      until,
    );

    const owner = await signIn('owner@locks.example', PASSWORD);
    // The members list shows owners and admins who has two-factor on and who is locked out, until when.
    const listed = async () =>
      (await send(server, 'GET', `/api/w/${wid}/members?limit=200`, { cookie: owner.cookie })).body.data.find(
        (m: { id: string }) => m.id === p.id,
      );
    t.like(await listed(), { twoFactor: true, lockedUntil: new Date(until).toISOString() });
    const lifted = await send(server, 'DELETE', `/api/w/${wid}/members/${p.id}/lockout`, { cookie: owner.cookie });
    t.is(lifted.status, 200, JSON.stringify(lifted.body));
    t.deepEqual(lifted.body, { userId: p.id, lifted: ['totp'] });
    const records = (await ledger('member.lockout_lifted')).filter((r) => r.subject === p.id);
    t.deepEqual(
      records.map((r) => [r.actor, r.data]),
      [[`user:${ownerId}`, { lifted: [{ lockout: 'totp', lockedUntil: new Date(until).toISOString(), failures: 5 }] }]],
    );
    const signedIn = await signIn(p.email, PASSWORD, code());
    t.is(signedIn.status, 200, JSON.stringify(signedIn.body));
    t.like(await listed(), { twoFactor: true, lockedUntil: null });
    // Lifting again finds nothing to lift, and records nothing.
    const again = await send(server, 'DELETE', `/api/w/${wid}/members/${p.id}/lockout`, { cookie: owner.cookie });
    t.deepEqual(again.body, { userId: p.id, lifted: [] });
    t.is((await ledger('member.lockout_lifted')).filter((r) => r.subject === p.id).length, 1);
  },
);

test.serial('wrong codes when turning two-factor on count too', async (t) => {
  const p = await person();
  t.is((await send(server, 'POST', '/api/me/totp', { cookie: p.cookie })).status, 200);
  for (let i = 1; i <= 4; i += 1) {
    const res = await send(server, 'POST', '/api/me/totp/confirm', { cookie: p.cookie, payload: { code: '000000' } });
    t.like(res.body.error, { type: 'invalid_request', attemptsLeft: 5 - i });
  }
  assertLocked(
    t,
    await send(server, 'POST', '/api/me/totp/confirm', { cookie: p.cookie, payload: { code: '000000' } }),
    'totp',
    clock.ms + 15 * MIN,
  );
  clock.ms += 15 * MIN;
});

test.serial('only an owner lifts a lockout, never their own, and only of a member of their workspace', async (t) => {
  const p = await person();
  for (let i = 0; i < 5; i += 1) await changePassword(p.cookie, 'wrong');
  const admin = await person('admin');
  const refused = await send(server, 'DELETE', `/api/w/${wid}/members/${p.id}/lockout`, { cookie: admin.cookie });
  t.is(refused.status, 403);
  t.is(refused.body.error.type, 'forbidden');
  t.is((await changePassword(p.cookie, PASSWORD)).body.error.type, 'account_locked', 'still locked');

  const owner = await signIn('owner@locks.example', PASSWORD);
  const self = await send(server, 'DELETE', `/api/w/${wid}/members/${ownerId}/lockout`, { cookie: owner.cookie });
  t.is(self.status, 409);
  t.is(self.body.error.type, 'second_owner_required');

  const outsider = await app.services.people.createWorkspace({
    name: 'Elsewhere',
    ownerEmail: `outsider${(n += 1)}@else.example`,
    ownerPassword: PASSWORD,
  });
  const notHere = await send(server, 'DELETE', `/api/w/${wid}/members/${outsider.ownerId}/lockout`, {
    cookie: owner.cookie,
  });
  t.is(notHere.status, 404);
  t.is(notHere.body.error.type, 'not_found');
  clock.ms += 15 * MIN;
});

test.serial('the counts live in the store: another instance on the same store counts on', async (t) => {
  const p = await person();
  for (let i = 0; i < 3; i += 1) t.is((await changePassword(p.cookie, 'wrong')).status, 400);
  const second = await openApp();
  try {
    const there = await changePassword(p.cookie, 'wrong', undefined, second.server);
    t.like(there.body.error, { type: 'invalid_request', attemptsLeft: 1 });
    assertLocked(t, await changePassword(p.cookie, 'wrong', undefined, second.server), 'password', clock.ms + 15 * MIN);
    // And the first instance sees the lock the second one made.
    t.is((await changePassword(p.cookie, PASSWORD)).body.error.type, 'account_locked');
  } finally {
    await second.server.stop();
    await second.app.close();
  }
  clock.ms += 15 * MIN;
});
