import test from 'ava';
import { expectStatus } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, type Gateway } from './support.js';

/**
 * Data-loss rules through the gateway (issue 6): the workspace's setting (console, owners and
 * admins) is off, redact or block; block refuses with counts per kind and never a value (in the
 * error and in the logs); redact replaces before the request leaves.
 */
let vendor: MockVendor;
let gw: Gateway;
let key: string;

const CARD = '4111 1111 1111 1111';
const EMAIL = 'jane.doe@example.com';
const prompt = `Charge card ${CARD} and mail ${EMAIL} and also bob@example.org`;

const chat = (content: string) =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(key),
    json: { model: 'small', messages: [{ role: 'user', content }] },
  });
const messages = (content: string) =>
  call(gw.server.url, 'POST', '/v1/messages', {
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    json: {
      model: 'small',
      max_tokens: 20,
      system: `reply to ${EMAIL}`,
      messages: [{ role: 'user', content: [{ type: 'text', text: content }] }],
    },
  });

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor);
  key = await gw.key({ defaultTaskClass: 'general' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

test.serial('off (the default): the prompt leaves as written', async (t) => {
  t.like((await gw.owner.get('/gateway')).body, { dataLoss: 'off' });
  t.is((await chat(prompt)).status, 200);
  t.is(vendor.calls.at(-1)!.body.messages[0].content, prompt);
});

test.serial(
  'block: 400 sensitive_data_blocked with counts by kind, nothing sent, no value in the answer or the logs',
  async (t) => {
    const set = expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'block' }), 200, 'setting');
    t.like(set.body, { dataLoss: 'block' });
    t.like(
      (await gw.owner.ledger()).find((r) => r.kind === 'gateway.settings_updated'),
      { data: { dataLoss: 'block' } },
    );
    const before = vendor.count();
    const res = await chat(prompt);
    assertError(t, res, 400, 'sensitive_data_blocked');
    t.deepEqual(res.body.error.findings, { card: 1, email: 2 });
    t.regex(res.body.error.message, /2 email addresses and 1 payment card number/);
    const anth = await messages(`my key is sk-proj-${'a'.repeat(40)}`);
    t.is(anth.status, 400);
    t.like(anth.body, { type: 'error', error: { type: 'sensitive_data_blocked', findings: { secret: 1, email: 1 } } });
    t.is(vendor.count(), before, 'nothing was sent');
    for (const text of [res.text, anth.text, gw.server.logs()]) {
      t.false(text.includes('4111'), 'no card digits');
      t.false(text.includes('jane.doe'), 'no address');
      t.false(text.includes('sk-proj-'), 'no secret');
    }
    t.is((await chat('nothing sensitive here')).status, 200);
  },
);

test.serial('redact: values are replaced before the request leaves, and the counts are reported', async (t) => {
  expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'redact' }), 200, 'setting');
  const res = await chat(prompt);
  t.is(res.status, 200, res.text);
  t.is(res.headers['x-svc-redacted'], 'card=1, email=2');
  const sent = vendor.calls.at(-1)!.body.messages[0].content as string;
  t.is(sent, 'Charge card [REDACTED:card] and mail [REDACTED:email] and also [REDACTED:email]');
  const anth = await messages(`card ${CARD}`);
  t.is(anth.status, 200, anth.text);
  // Served by an OpenAI-kind model: the system prompt and the text block arrive translated, redacted.
  t.deepEqual(vendor.calls.at(-1)!.body.messages, [
    { role: 'system', content: 'reply to [REDACTED:email]' },
    { role: 'user', content: 'card [REDACTED:card]' },
  ]);
});

test.serial('only owners and admins change the setting; a bad value is refused', async (t) => {
  assertError(t, await gw.owner.send('PUT', '/gateway', { dataLoss: 'shred' }), 400, 'invalid_request');
  assertError(t, await gw.owner.send('PUT', '/gateway', {}), 400, 'invalid_request');
  t.like((await gw.owner.get('/gateway')).body, { dataLoss: 'redact' });
});
