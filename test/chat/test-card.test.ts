import test from 'ava';
import { assertError, call, signIn } from '../helpers/http.js';
import { consoleClient, ownerConsole, type Person } from '../helpers/console.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';
import { startReceiver, until } from '../helpers/receiver.js';
import { withStore } from '../helpers/store.js';

/**
 * `POST /api/w/{wid}/integrations/chat-relay/test` (the console's "Send a test card"): refused
 * while the relay is not set up (400, nothing recorded), refused to an admin (403: the relay is
 * owners'), refused without the CSRF header; for an owner, `202 { eventId, url }`, the card
 * delivered to the relay signed with its secret, and `integration.test_sent` in the ledger. The
 * console's side: test/browser/console-integrations-setup.test.ts.
 */
let server: ServedInProcess;
let owner: Person;
let admin: ReturnType<typeof consoleClient>;
let secret = '';
const relay = await startReceiver(() => secret);

test.before(async () => {
  server = await serveInProcess({
    env: {
      SVC_SIGNIN_RATE_PER_MINUTE: '1000',
      SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1',
      SVC_WEBHOOKS_DISPATCH_INTERVAL_MS: '50',
    },
  });
  owner = await ownerConsole(server);
  await withStore(server.dataDir, (app) =>
    app.services.people.addMember({
      workspaceId: owner.wid,
      email: 'admin@relay.example',
      name: 'Ada',
      password: 'admin password 1',
      role: 'admin',
    }),
  );
  admin = consoleClient(server, owner.wid, await signIn(server.url, 'admin@relay.example', 'admin password 1'));
});

test.after.always(async () => {
  await stopAndClean(server);
  await relay.close();
});

test.serial('refused before the relay is set up, to an admin, and without the CSRF header', async (t) => {
  const before = (await owner.ledger()).length;
  const none = await owner.send('POST', '/integrations/chat-relay/test', {});
  assertError(t, none, 400, 'invalid_request');
  t.regex(none.body.error.message, /not set up/);
  assertError(t, await admin.send('POST', '/integrations/chat-relay/test', {}), 403, 'forbidden');
  const noCsrf = await call(server.url, 'POST', owner.api('/integrations/chat-relay/test'), {
    headers: { cookie: owner.cookie },
    json: {},
  });
  t.is(noCsrf.status, 403);
  t.is((await owner.ledger()).length, before, 'nothing recorded');
});

test.serial('an owner sends a test card: signed with the relay secret, recorded in the ledger', async (t) => {
  const setup = await owner.send('PUT', '/integrations/chat-relay', { url: relay.url });
  t.is(setup.status, 200);
  secret = setup.body.secret;
  const sent = await owner.send('POST', '/integrations/chat-relay/test', {});
  t.is(sent.status, 202, sent.text);
  t.is(sent.body.url, relay.url);
  await until('the test card', () => relay.state.received.length > 0);
  const card = relay.state.received[0]!;
  t.true(card.verified);
  t.is(card.id, sent.body.eventId);
  t.like(JSON.parse(card.body), { test: true, buttons: [], workspaceId: owner.wid });
  const record = (await owner.ledger()).find((r) => r.id === sent.body.eventId);
  t.like(record, { kind: 'integration.test_sent', subject: 'chat-relay', actor: `user:${owner.id}` });
});
