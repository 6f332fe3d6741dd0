import test from 'ava';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, user, type Gateway } from './support.js';

/**
 * Call records and what is read from them (issue 6): every call is recorded with its key,
 * principal, team, model, tokens, cost and outcome, and admin keys read usage reports; the
 * plan's monthly request allowance is 429 plan_limit_reached once used.
 */
let vendor: MockVendor;
let gw: Gateway;
let alice: string;
let bob: string;
let admin: string;

const chat = (key: string, model = 'small') =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(key),
    json: { model, messages: user('hello') },
  });
const usage = (by: string) => call(gw.server.url, 'GET', `/v1/admin/usage?by=${by}`, { headers: bearer(admin) });

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor, {}, { SVC_PLAN_MONTHLY_REQUESTS: '4' });
  alice = await gw.key({ defaultTaskClass: 'general', principal: 'alice', team: 'search' });
  bob = await gw.key({ defaultTaskClass: 'general', principal: 'bob', team: 'ads', policyProfile: 'eu-only' });
  admin = await gw.key({ scope: 'admin' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

test.serial('usage reports group the recorded calls by model, principal and team', async (t) => {
  const answers = [await chat(alice), await chat(alice), await chat(bob)];
  for (const a of answers) t.is(a.status, 200, a.text);
  const byModel = await usage('model');
  t.is(byModel.status, 200, byModel.text);
  const small = byModel.body.data.find((g: { group: string }) => g.group === 'small');
  const eu = byModel.body.data.find((g: { group: string }) => g.group === 'claude-eu');
  t.like(small, { calls: 2, failed: 0, inputTokens: 2, outputTokens: 4 });
  t.like(eu, { calls: 1, inputTokens: 1, outputTokens: 2 });
  t.is(
    small.costMicros + eu.costMicros,
    answers.reduce((s, a) => s + Number(a.headers['x-svc-cost-micros']), 0),
  );
  t.deepEqual(
    (await usage('principal')).body.data.map((g: { group: string; calls: number }) => [g.group, g.calls]).sort(),
    [
      ['alice', 2],
      ['bob', 1],
    ],
  );
  t.deepEqual((await usage('team')).body.data.map((g: { group: string }) => g.group).sort(), ['ads', 'search']);
  assertError(t, await call(gw.server.url, 'GET', '/v1/admin/usage', { headers: bearer(alice) }), 403, 'forbidden');
});

test.serial("429 plan_limit_reached once the month's allowance is used, and nothing is sent", async (t) => {
  t.is((await chat(alice)).status, 200, 'the fourth request of the month');
  const before = vendor.count();
  const res = await chat(alice);
  assertError(t, res, 429, 'plan_limit_reached');
  t.is(vendor.count(), before);
});
