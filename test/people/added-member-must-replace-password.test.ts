import test from 'ava';
import { ownerConsole, expectStatus, type Person } from '../helpers/console.js';
import { call, signIn } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { SERVER_ENV } from '../approvals/support.js';

/**
 * Review 2: people/service.ts says "Until a person replaces a password someone else chose, no
 * workspace permission holds", and members.ts:11 says a new person "needs a password someone
 * chose for them". But addMember (members.ts:122) stores the new user without
 * `mustChangePassword`, so an owner or admin keeps a working password for every account they
 * create: they can sign in as that person and act (approve, restart) under that person's name,
 * e.g. as the "second person" of a two-person rule, and the ledger names the wrong person.
 */

let server: ServedInProcess;
let owner: Person;

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
});

test.after.always(() => stopAndClean(server));

test('a person added with a password chosen by an admin must replace it before acting', async (t) => {
  expectStatus(
    await owner.send('POST', '/members', {
      email: 'new.admin@example.com',
      name: 'New',
      role: 'admin',
      password: 'chosen-by-the-owner-1',
    }),
    201,
    'add member',
  );
  const cookie = await signIn(server.url, 'new.admin@example.com', 'chosen-by-the-owner-1');
  const me = await call(server.url, 'GET', '/api/me', { headers: { cookie } });
  t.is(me.status, 200, me.text);
  t.true(me.body.user.mustChangePassword, 'the password someone else chose is not flagged as one to replace');
  const agents = await call(server.url, 'GET', `/api/w/${owner.wid}/agents`, { headers: { cookie } });
  t.is(agents.status, 403, `workspace permission holds with someone else's password: ${agents.status}`);
});
