import test from 'ava';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { consoleClient, expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { PAY_ACME, payment } from '../helpers/gate.js';
import { assertError, bearer, call, signIn } from '../helpers/http.js';
import { startServer, stopAndClean, type RunningServer } from '../helpers/process.js';
import { startReceiver, until, type Receiver } from '../helpers/receiver.js';

/**
 * Outbound webhooks (issue 8): events signed with svc-signature over the exact bytes
 * sent, each with a stable svc-event-id, delivered from a durable outbox to a receiver that
 * fails, then times out, then recovers; nothing lost when the server is killed with SIGKILL in
 * the middle; an endpoint that keeps failing is disabled, and a redelivery brings it back.
 */
const FAST = {
  ...SERVER_ENV,
  SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1',
  SVC_WEBHOOKS_TIMEOUT_MS: '300',
  SVC_WEBHOOKS_BACKOFF_BASE_MS: '100',
  SVC_WEBHOOKS_BACKOFF_MAX_MS: '300',
  SVC_WEBHOOKS_DISPATCH_INTERVAL_MS: '50',
  SVC_WEBHOOKS_GIVE_UP_AFTER_MS: '120000',
};

let server: RunningServer;
let owner: Person;
let bot: Bot;
let secret = '';
let receiver: Receiver;

test.before(async () => {
  receiver = await startReceiver(() => secret);
  server = await startServer({ env: FAST });
  owner = await ownerConsole(server);
  bot = await makeBot(owner, 'hooks-bot', [PAY_ACME]);
});

test.after.always(async () => {
  await stopAndClean(server);
  await receiver.close();
});

/** The decided actions of the bot in the ledger: the events the receiver must get. */
async function decidedIds(person: Person): Promise<string[]> {
  return (await person.ledger())
    .filter((r) => (r.kind === 'action.allowed' || r.kind === 'action.denied') && r.actor === `agent:${bot.agentId}`)
    .map((r) => r.id);
}

test.serial('an endpoint is added with its secret shown once; link-local targets are refused', async (t) => {
  assertError(
    t,
    await owner.send('POST', '/webhooks', { url: 'http://169.254.169.254/latest', events: ['action.decided'] }),
    400,
    'invalid_request',
  );
  assertError(
    t,
    await owner.send('POST', '/webhooks', { url: receiver.url, events: ['no.such.event'] }),
    400,
    'invalid_request',
  );
  const added = expectStatus(
    await owner.send('POST', '/webhooks', { url: receiver.url, events: ['action.decided', 'agent.stopped'] }),
    201,
    'add',
  );
  t.regex(added.body.secret, /^whs_/);
  t.regex(added.body.id, /^whk_/);
  secret = added.body.secret;
  const listed = await owner.get('/webhooks');
  t.false(listed.text.includes(secret));
  t.like(listed.body.data[0], { url: receiver.url, events: ['action.decided', 'agent.stopped'], disabledAt: null });
});

test.serial(
  'a receiver that fails, then times out, then recovers gets every event, each signed, each with a stable id',
  async (t) => {
    t.timeout(60_000);
    receiver.state.mode = 'fail';
    for (const amount of [100, 200, 9000])
      expectStatus(
        await call(server.url, 'POST', '/v1/actions/authorize', { headers: bearer(bot.key), json: payment(amount) }),
        200,
        'authorize',
      );
    await until('failed tries', () => receiver.state.received.filter((r) => r.status === 500).length >= 6);
    receiver.state.mode = 'hang';
    await until('timed-out tries', () => receiver.state.received.filter((r) => r.status === 0).length >= 3);
    receiver.state.mode = 'ok';
    const expected = await decidedIds(owner);
    t.is(expected.length, 3);
    await until('every event delivered', () =>
      expected.every((id) => receiver.state.received.some((r) => r.id === id && r.status === 200)),
    );
    t.true(
      receiver.state.received.every((r) => r.verified),
      'every try carried a signature the receiver verified',
    );
    // Deduplicated by id, the receiver holds every event exactly once, with the same bytes on every try.
    const byId = new Map<string, Set<string>>();
    for (const r of receiver.state.received) byId.set(r.id, (byId.get(r.id) ?? new Set()).add(r.body));
    t.deepEqual([...byId.keys()].sort(), [...expected].sort());
    t.true([...byId.values()].every((bodies) => bodies.size === 1));
    const first = JSON.parse([...byId.get(expected[0]!)!][0]!);
    t.like(first, { id: expected[0], type: 'action.decided', workspaceId: server.boot.workspaceId });

    const endpoint = (await owner.get('/webhooks')).body.data[0];
    const log = (await owner.get(`/webhooks/${endpoint.id}/deliveries`)).body.data as Array<{
      status: string;
      attempts: Array<{ status: number | null; error: string | null }>;
    }>;
    t.true(log.every((d) => d.status === 'delivered'));
    const tries = log.flatMap((d) => d.attempts);
    t.true(
      tries.some((a) => a.status === 500) &&
        tries.some((a) => a.error === 'timed out') &&
        tries.some((a) => a.status === 200),
    );
  },
);

test.serial(
  'removing an endpoint: it is no longer listed, the removal is recorded, and it cannot be removed twice',
  async (t) => {
    const added = expectStatus(
      await owner.send('POST', '/webhooks', { url: receiver.url, events: ['agent.stopped'] }),
      201,
      'add',
    );
    t.true((await owner.get('/webhooks')).body.data.some((e: { id: string }) => e.id === added.body.id));
    const removed = await owner.send('DELETE', `/webhooks/${added.body.id}`);
    t.is(removed.status, 200, removed.text);
    t.deepEqual(removed.body, {});
    t.false((await owner.get('/webhooks')).body.data.some((e: { id: string }) => e.id === added.body.id));
    t.like(
      (await owner.ledger()).find((r) => r.kind === 'webhook.removed' && r.subject === added.body.id),
      { actor: `user:${owner.id}` },
    );
    assertError(t, await owner.send('DELETE', `/webhooks/${added.body.id}`), 404, 'not_found');
  },
);

test.serial('killing the server with SIGKILL during delivery loses no event', async (t) => {
  t.timeout(60_000);
  receiver.state.mode = 'hang';
  const before = await decidedIds(owner);
  for (const amount of [300, 400])
    expectStatus(
      await call(server.url, 'POST', '/v1/actions/authorize', { headers: bearer(bot.key), json: payment(amount) }),
      200,
      'authorize',
    );
  const fresh = (await decidedIds(owner)).filter((id) => !before.includes(id));
  t.is(fresh.length, 2);
  await until('a try in flight', () => receiver.state.received.some((r) => fresh.includes(r.id)));
  const killed = server;
  t.is(await killed.stop('SIGKILL'), null, 'killed, not exited');

  receiver.state.mode = 'ok';
  server = await startServer({ env: FAST, dataDir: killed.dataDir });
  const cookie = await signIn(server.url, killed.boot.owner!.email, `${killed.boot.owner!.password}-changed`);
  const again = consoleClient(server, killed.boot.workspaceId!, cookie);
  await until('the events held across the kill delivered', () =>
    fresh.every((id) => receiver.state.received.some((r) => r.id === id && r.status === 200)),
  );
  const endpoint = (await again.get('/webhooks')).body.data[0];
  const log = (await again.get(`/webhooks/${endpoint.id}/deliveries`)).body.data as Array<{
    eventId: string;
    status: string;
  }>;
  t.deepEqual(
    log.filter((d) => fresh.includes(d.eventId)).map((d) => d.status),
    ['delivered', 'delivered'],
  );
});

test.serial('an endpoint that keeps failing is disabled, recorded, and brought back by a redelivery', async (t) => {
  t.timeout(60_000);
  const other = await startServer({ env: { ...FAST, SVC_WEBHOOKS_GIVE_UP_AFTER_MS: '800' } });
  try {
    const boss = await ownerConsole(other);
    const agent = await makeBot(boss, 'failing-bot', [PAY_ACME]);
    const failing = await startReceiver(() => '');
    failing.state.mode = 'fail';
    try {
      const added = expectStatus(
        await boss.send('POST', '/webhooks', { url: failing.url, events: ['action.decided'] }),
        201,
        'add',
      );
      expectStatus(
        await call(other.url, 'POST', '/v1/actions/authorize', { headers: bearer(agent.key), json: payment(100) }),
        200,
        'authorize',
      );
      await until('the endpoint disabled', async () => (await boss.get('/webhooks')).body.data[0].disabledAt !== null);
      const ledger = await boss.ledger();
      t.true(ledger.some((r) => r.kind === 'webhook.disabled' && r.subject === added.body.id));
      const [delivery] = (await boss.get(`/webhooks/${added.body.id}/deliveries`)).body.data as Array<{
        id: string;
        status: string;
        attempts: unknown[];
      }>;
      t.is(delivery!.status, 'failed');
      t.true(delivery!.attempts.length >= 2);
      const tries = failing.state.received.length;

      failing.state.mode = 'ok';
      expectStatus(
        await boss.send('POST', `/webhooks/${added.body.id}/deliveries/${delivery!.id}/redeliver`, {}),
        200,
        'redeliver',
      );
      await until('the redelivery answered 200', () =>
        failing.state.received.slice(tries).some((r) => r.status === 200),
      );
      t.is((await boss.get('/webhooks')).body.data[0].disabledAt, null);
    } finally {
      await failing.close();
    }
  } finally {
    await stopAndClean(other);
  }
});

test.serial('without allowPrivateTargets, loopback and private targets are refused', async (t) => {
  const plain = await startServer({ env: SERVER_ENV });
  try {
    const boss = await ownerConsole(plain);
    for (const url of [receiver.url, 'http://10.1.2.3/hook', 'http://[fe80::1]/hook']) {
      assertError(t, await boss.send('POST', '/webhooks', { url, events: ['action.decided'] }), 400, 'invalid_request');
    }
  } finally {
    await stopAndClean(plain);
  }
});
