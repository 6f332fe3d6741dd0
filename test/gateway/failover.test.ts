import test from 'ava';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { manualClock } from '../helpers/clock.js';
import { startGateway, user, type Gateway } from './support.js';

/**
 * Failover (issue 6): on a connection error, a timeout, 429 or 5xx the next eligible model
 * serves; 502 upstream_failure names every model tried; a stream fails over only before its
 * first byte, and a stream cut midway reaches the client as an error, never as a whole answer.
 * A circuit breaker stops paying for a dead model on every request.
 */
let vendor: MockVendor;
let gw: Gateway;
let us: string;

const chat = (body: Record<string, unknown> = {}) =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(us),
    json: { model: 'small', messages: user('hello'), ...body },
  });

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor, { headersTimeoutMs: 400, breaker: { failures: 1000, cooldownMs: 60_000 } });
  us = await gw.key({ defaultTaskClass: 'general', policyProfile: 'us-only' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

for (const fault of [
  { kind: 'status', status: 500 },
  { kind: 'status', status: 503 },
  // Without retry-after: one with it also keeps the model out of later requests until then
  // (deployments.test.ts).
  { kind: 'status', status: 429 },
  { kind: 'reset' },
  { kind: 'hang' },
] as const) {
  test.serial(
    `small fails (${fault.kind}${'status' in fault ? ` ${fault.status}` : ''}): large serves the same request`,
    async (t) => {
      vendor.fault('small-2026', fault);
      const before = { small: vendor.count('small-2026'), large: vendor.count('large-2026') };
      const res = await chat();
      t.is(res.status, 200, res.text);
      t.is(res.headers['x-svc-routed-to'], 'large');
      t.is(res.body.choices[0].message.content, 'echo: hello');
      t.deepEqual(
        { small: vendor.count('small-2026') - before.small, large: vendor.count('large-2026') - before.large },
        { small: 1, large: 1 },
      );
    },
  );
}

test.serial('502 upstream_failure names every model tried', async (t) => {
  vendor.fault('small-2026', { kind: 'status', status: 500 });
  vendor.fault('large-2026', { kind: 'reset' });
  const res = await chat();
  assertError(t, res, 502, 'upstream_failure');
  t.deepEqual(res.body.error.attemptedModels, ['small', 'large']);
  t.truthy(res.headers['x-svc-call-id']);
});

test.serial("a vendor's 400 is the client's to fix: answered, not failed over", async (t) => {
  vendor.fault('small-2026', { kind: 'status', status: 400 });
  const large = vendor.count('large-2026');
  const res = await chat();
  assertError(t, res, 400, 'invalid_request');
  t.regex(res.body.error.message, /small refused the request \(HTTP 400\)/);
  t.is(vendor.count('large-2026'), large);
});

test.serial('a stream fails over before its first byte', async (t) => {
  vendor.fault('small-2026', { kind: 'status', status: 502 });
  let text = '';
  const { data: stream, response } = await gw
    .openai(us)
    .chat.completions.create({ model: 'small', messages: user('stream please'), stream: true })
    .withResponse();
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  t.is(text, 'echo: stream please');
  t.is(response.headers.get('x-svc-routed-to'), 'large');
});

test.serial('a stream cut midway is an error for the client, and is not failed over', async (t) => {
  vendor.fault('small-2026', { kind: 'cut', afterChunks: 3 });
  const large = vendor.count('large-2026');
  const stream = await gw
    .openai(us)
    .chat.completions.create({ model: 'small', messages: user('one two three four five six seven'), stream: true });
  let text = '';
  await t.throwsAsync(async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  });
  t.true(
    text.length > 0 && text !== 'echo: one two three four five six seven',
    `a part arrived, never the whole: "${text}"`,
  );
  t.is(vendor.count('large-2026'), large, 'no failover after the first byte');

  vendor.fault('small-2026', { kind: 'cut', afterChunks: 2 });
  await t.throwsAsync(
    gw
      .anthropic(us)
      .messages.stream({ model: 'small', max_tokens: 50, messages: user('one two three four five') })
      .finalMessage(),
  );
});

test.serial('a circuit breaker skips a dead model until its cooldown ends, then tries it once', async (t) => {
  const clock = manualClock();
  const own = await startGateway(
    vendor,
    {
      breaker: { failures: 2, cooldownMs: 400 },
      models: [
        {
          id: 'flaky',
          provider: 'vendor-o',
          upstreamModel: 'flaky-1',
          priceMicrosPerMTokIn: 1,
          priceMicrosPerMTokOut: 1,
          jurisdiction: { domicile: 'US', region: 'us-east' },
        },
        {
          id: 'steady',
          provider: 'vendor-o',
          upstreamModel: 'steady-1',
          priceMicrosPerMTokIn: 10,
          priceMicrosPerMTokOut: 10,
          jurisdiction: { domicile: 'US', region: 'us-east' },
        },
      ],
      policyProfiles: [],
    },
    {},
    { clock },
  );
  try {
    const key = await own.key({ defaultTaskClass: 'general' });
    const ask = () =>
      call(own.server.url, 'POST', '/v1/chat/completions', {
        headers: bearer(key),
        json: { model: 'flaky', messages: user('hi') },
      });
    vendor.fault('flaky-1', { kind: 'status', status: 500 }, Infinity);
    for (let i = 0; i < 2; i += 1) t.is((await ask()).headers['x-svc-routed-to'], 'steady');
    t.is(vendor.count('flaky-1'), 2);
    for (let i = 0; i < 5; i += 1) t.is((await ask()).headers['x-svc-routed-to'], 'steady');
    t.is(vendor.count('flaky-1'), 2, 'while open, the dead model costs no attempt');
    const admin = await own.key({ scope: 'admin' });
    const status = await call(own.server.url, 'GET', '/v1/admin/upstreams', { headers: bearer(admin) });
    t.like(
      status.body.data.find((m: { model: string }) => m.model === 'flaky'),
      { circuit: 'open' },
    );
    clock.advance(450);
    vendor.reset();
    t.is(
      (await ask()).headers['x-svc-routed-to'],
      'flaky',
      'after the cooldown one trial, which succeeds and closes it',
    );
    t.like((await call(own.server.url, 'GET', '/v1/admin/upstreams', { headers: bearer(admin) })).body.data[0], {
      model: 'flaky',
      circuit: 'closed',
    });
  } finally {
    await stopAndClean(own.server);
  }
});
