import test from 'ava';
import { createHash } from 'node:crypto';
import Iron from '@hapi/iron';
import { deriveKey } from '../../src/lib/seal.js';
import { loadMasterKey } from '../../src/store/index.js';
import { call } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { fixedClock, withStore } from '../helpers/store.js';

/**
 * A session ends at its expiry (session.ttlHours, default 12), checked against the store on every
 * request: a cookie that still unseals is refused once its session is past expiry.
 */
let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess();
});

test.after.always(() => stopAndClean(server));

async function cookieFor(secret: string): Promise<string> {
  const password = deriveKey(loadMasterKey(server.dataDir, null), 'cookie-seal').toString('hex');
  return `sid=${await Iron.seal({ sid: secret }, password, Iron.defaults)}`;
}

test.serial('a session signed in 13 hours ago (12 hour lifetime) is refused; a fresh one is accepted', async (t) => {
  const owner = server.boot.owner!;
  const stale = await withStore(server.dataDir, (app) => app.services.people.signIn(owner.email, owner.password), {
    clock: fixedClock(Date.now() - 13 * 3_600_000),
  });
  const fresh = await withStore(server.dataDir, (app) => app.services.people.signIn(owner.email, owner.password));

  const refused = await call(server.url, 'GET', '/api/me', { headers: { cookie: await cookieFor(stale.secret) } });
  t.is(refused.status, 401);
  t.is(refused.body.error.type, 'unauthenticated');
  t.regex(refused.body.error.message, /session has ended/);

  const accepted = await call(server.url, 'GET', '/api/me', { headers: { cookie: await cookieFor(fresh.secret) } });
  t.is(accepted.status, 200);
  t.is(accepted.body.user.email, owner.email);
});

test.serial('a cookie sealed with another key is refused', async (t) => {
  const owner = server.boot.owner!;
  const { secret } = await withStore(server.dataDir, (app) => app.services.people.signIn(owner.email, owner.password));
  const forged = `sid=${await Iron.seal({ sid: secret }, 'x'.repeat(64), Iron.defaults)}`;
  const res = await call(server.url, 'GET', '/api/me', { headers: { cookie: forged } });
  t.is(res.status, 401);
  t.is(res.body.error.type, 'unauthenticated');
});

test.serial("signing in clears the person's expired sessions from the store", async (t) => {
  const owner = server.boot.owner!;
  const old = await withStore(server.dataDir, (app) => app.services.people.signIn(owner.email, owner.password), {
    clock: fixedClock(Date.now() - 30 * 3_600_000),
  });
  const hashOf = (secret: string) => createHash('sha256').update(secret).digest('base64url');
  t.truthy(
    await withStore(server.dataDir, (app) => app.store.tables.sessions.get(hashOf(old.secret))),
    'the expired session is still stored',
  );
  await withStore(server.dataDir, (app) => app.services.people.signIn(owner.email, owner.password));
  t.is(await withStore(server.dataDir, (app) => app.store.tables.sessions.get(hashOf(old.secret))), undefined);
});
