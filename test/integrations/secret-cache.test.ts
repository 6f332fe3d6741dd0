import test from 'ava';
import { createHmac } from 'node:crypto';
import { makeBot, SERVER_ENV } from '../approvals/support.js';
import { consoleClient, expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { PAY_ACME } from '../helpers/gate.js';
import { assertError, call, signIn, type Reply } from '../helpers/http.js';
import { startServer, stopAndClean, type RunningServer } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * The integration registry caches opened (unsealed) signing secrets in memory behind the
 * `integrations` generation counter (integrations/registry.ts). A rotation made
 * through another instance (a second `svc serve` process on the same store) is seen by the very
 * next delivery to this one, even when the old secret has just been served from the cache.
 */
let server: ServedInProcess;
let other: RunningServer | undefined;
let owner: Person;
let wid: string;

const sign = (key: string, body: string, t = Math.floor(Date.now() / 1000)) =>
  `t=${t},v1=${createHmac('sha256', key).update(`${t}.${body}`).digest('hex')}`;
let sequence = 0;
function deliver(secret: string, base = server.url): Promise<Reply> {
  const body = JSON.stringify({
    id: `evt_cache_${(sequence += 1)}`,
    type: 'charge.refunded',
    cardId: 'card_cache',
    amount: 100,
    currency: 'EUR',
    merchant: { name: 'Acme', domain: 'acme.example', mcc: '5734' },
    createdAt: new Date().toISOString(),
  });
  return call(base, 'POST', `/v1/hooks/issuer/${wid}`, {
    headers: { 'content-type': 'application/json', 'svc-signature': sign(secret, body) },
    body,
  });
}

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
  wid = server.boot.workspaceId!;
  const bot = await makeBot(owner, 'cache-card-bot', [PAY_ACME]);
  expectStatus(await owner.send('PUT', '/issuer/cards/card_cache', { agentId: bot.agentId }), 200, 'map');
});

test.after.always(async () => {
  await other?.stop();
  await stopAndClean(server);
});

test.serial(
  'a secret rotated with revokePrevious through another instance: the very next delivery signed with the old one is 401',
  async (t) => {
    const first = expectStatus(await owner.send('PUT', '/integrations/issuer', {}), 200, 'configure');
    const old = first.body.secret as string;
    // Twice: the second is verified against the cached secret.
    t.is((await deliver(old)).status, 200);
    t.is((await deliver(old)).status, 200);

    other = await startServer({ dataDir: server.dataDir, env: SERVER_ENV });
    const elsewhere = consoleClient(
      other,
      wid,
      await signIn(other.url, server.boot.owner!.email, `${server.boot.owner!.password}-changed`),
    );
    const rotated = expectStatus(
      await elsewhere.send('PUT', '/integrations/issuer', { rotate: true, revokePrevious: true }),
      200,
      'rotate elsewhere',
    );
    t.not(rotated.body.secret, old);

    assertError(t, await deliver(old), 401, 'unauthenticated');
    const fresh = await deliver(rotated.body.secret as string);
    t.is(fresh.status, 200, fresh.text);
    t.deepEqual(fresh.body, { received: true });

    // And back the other way: the other instance has the new secret cached, this one rotates it out.
    t.is((await deliver(rotated.body.secret as string, other.url)).status, 200);
    t.is((await deliver(rotated.body.secret as string, other.url)).status, 200);
    const again = expectStatus(
      await owner.send('PUT', '/integrations/issuer', { rotate: true, revokePrevious: true }),
      200,
      'rotate here',
    );
    assertError(t, await deliver(rotated.body.secret as string, other.url), 401, 'unauthenticated');
    t.is((await deliver(again.body.secret as string, other.url)).status, 200);
  },
);
