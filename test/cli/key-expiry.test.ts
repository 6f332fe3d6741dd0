import test from 'ava';
import { manualClock } from '../helpers/clock.js';
import { assertError, bearer, call, type Json } from '../helpers/http.js';
import { authorize, payment } from '../helpers/gate.js';
import { svc, type CliResult, stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * `svc keys create --expires-in-days D`: through a running server (SVC_ADMIN_KEY) or --local on
 * the store, the key carries `expiresAt` (D days after it was minted, by the clock of whoever
 * mints it), printed with the key and by `svc keys list`; once the server's clock (moved by the
 * test) passes it, the key is refused as a revoked one is. A value outside 1-3650 is a usage
 * error (exit 2) and mints nothing.
 */
const DAY = 86_400_000;
const clock = manualClock();

let server: ServedInProcess;
let adminKey: string;

const onlyJson = (res: CliResult): Json => JSON.parse(res.stdout);
const local = (args: string[]) => svc([...args, '--local', '--data-dir', server.dataDir]);
const remote = (args: string[]) => svc(args, { env: { SVC_ADMIN_KEY: adminKey, SVC_URL: server.url } });
const whoami = (key: string) => call(server.url, 'GET', '/v1/whoami', { headers: bearer(key) });

test.before(async () => {
  server = await serveInProcess({ clock });
  const res = await local(['keys', 'create', '--scope', 'admin', '--name', 'root', '--json']);
  if (res.code !== 0) throw new Error(`keys create --local failed: ${res.code}\n${res.stdout}\n${res.stderr}`);
  adminKey = onlyJson(res).key;
});

test.after.always(() => stopAndClean(server));

test.serial(
  '--expires-in-days: --local and through the server, shown when minted and by keys list; refused once past',
  async (t) => {
    const mintedLocal = await local([
      'keys',
      'create',
      '--scope',
      'inference',
      '--name',
      'nightly',
      '--expires-in-days',
      '3',
      '--json',
    ]);
    t.is(mintedLocal.code, 0, mintedLocal.stdout + mintedLocal.stderr);
    const localKey = onlyJson(mintedLocal);
    t.is(localKey.expiresAt, new Date(Date.parse(localKey.createdAt) + 3 * DAY).toISOString());

    const mintedRemote = await remote([
      'keys',
      'create',
      '--scope',
      'inference',
      '--name',
      'ci',
      '--expires-in-days',
      '2',
    ]);
    t.is(mintedRemote.code, 0, mintedRemote.stderr);
    const remoteValue = mintedRemote.stdout.trim();
    const remoteView = (await whoami(remoteValue)).body;
    t.is(remoteView.expiresAt, new Date(clock.now() + 2 * DAY).toISOString(), "the server's clock stamps it");
    t.regex(
      mintedRemote.stderr,
      new RegExp(`inference key ${remoteView.id} in ws_\\w+, expires ${remoteView.expiresAt}: shown once`),
    );

    const forever = onlyJson(await remote(['keys', 'create', '--scope', 'inference', '--name', 'forever', '--json']));
    t.is(forever.expiresAt, null);

    const listed = await local(['keys', 'list']);
    t.is(listed.code, 0, listed.stderr);
    t.regex(listed.stdout, new RegExp(`${localKey.id}\\s+inference\\s+nightly\\s+expires ${localKey.expiresAt}`));
    t.regex(listed.stdout, new RegExp(`${remoteView.id}\\s+inference\\s+ci\\s+expires ${remoteView.expiresAt}`));
    t.notRegex(listed.stdout.split('\n').find((l) => l.includes(forever.id)) ?? '', /expires/);
    const listedJson = onlyJson(await remote(['keys', 'list', '--json'])) as {
      data: { id: string; expiresAt: unknown }[];
    };
    t.is(listedJson.data.find((k) => k.id === localKey.id)?.expiresAt, localKey.expiresAt);

    t.is((await whoami(localKey.key)).status, 200);
    t.is((await whoami(remoteValue)).status, 200);
    clock.advance(2 * DAY);
    assertError(t, await whoami(remoteValue), 401, 'invalid_api_key');
    t.is((await whoami(localKey.key)).status, 200, 'the three-day key is still good on day two');
    clock.advance(DAY + 60_000);
    const expired = await whoami(localKey.key);
    assertError(t, expired, 401, 'invalid_api_key');
    t.is(expired.body.error.message, 'The key is unknown, expired or revoked.');
    t.is((await whoami(forever.key)).status, 200, 'a key without expiry goes on');
    t.is((await whoami(adminKey)).status, 200);
  },
);

test.serial('an agent key minted with --expires-in-days is refused at the gate once past', async (t) => {
  const agent = onlyJson(await local(['agents', 'create', '--name', 'expiring-cli-bot', '--json']));
  // Through the server, so its clock (moved days on by the test before) stamps the key.
  const res = await remote([
    'keys',
    'create',
    '--scope',
    'agent',
    '--agent',
    agent.id,
    '--expires-in-days',
    '1',
    '--json',
  ]);
  t.is(res.code, 0, res.stdout + res.stderr);
  const minted = onlyJson(res);
  t.like(minted, { scope: 'agent', agentId: agent.id, createdAt: new Date(clock.now()).toISOString() });
  t.is(minted.expiresAt, new Date(clock.now() + DAY).toISOString());
  t.is((await authorize(server, minted.key, payment(100))).status, 200);
  clock.advance(DAY);
  assertError(t, await authorize(server, minted.key, payment(100)), 401, 'invalid_api_key');
});

test('an --expires-in-days outside 1-3650, or not a whole number: exit 2, nothing minted', async (t) => {
  const before = onlyJson(await local(['keys', 'list', '--json'])).data.length as number;
  for (const days of ['0', '-3', '3651', '1.5', 'thirty']) {
    const res = await local(['keys', 'create', '--scope', 'inference', '--expires-in-days', days, '--json']);
    t.is(res.code, 2, `${days}: ${res.stdout}${res.stderr}`);
    const text = res.stdout + res.stderr;
    t.regex(text, /expires-?in-?days|expiresInDays/i, days);
  }
  const range = await local(['keys', 'create', '--scope', 'inference', '--expires-in-days', '3651', '--json']);
  t.is(onlyJson(range).error.message, '"expiresInDays" must be a whole number of days from 1 to 3650');
  t.is(onlyJson(await local(['keys', 'list', '--json'])).data.length, before);
});
