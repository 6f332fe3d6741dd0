import test from 'ava';
import { expectStatus } from '../helpers/console.js';
import { bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startReceiver, until, type Receiver } from '../helpers/receiver.js';
import { CATALOGUE, startGateway, user, type Gateway } from '../gateway/support.js';

/**
 * `budget.advisory`: when a budget's ladder reaches nudge, and then downgrade, its
 * workspace's endpoints get one signed event for each step in the period, however many model
 * calls follow; budget advisories are not ledger records, so this event comes from the gateway.
 */
const FAST = {
  SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1',
  SVC_WEBHOOKS_TIMEOUT_MS: '1000',
  SVC_WEBHOOKS_BACKOFF_BASE_MS: '100',
  SVC_WEBHOOKS_BACKOFF_MAX_MS: '300',
  SVC_WEBHOOKS_DISPATCH_INTERVAL_MS: '50',
};
// 100 dollars per million tokens each way: "hello" (1 token in, 2 out) costs 300 micro-dollars.
const PRICEY = {
  id: 'pricey',
  provider: 'vendor-o',
  upstreamModel: 'pricey-1',
  priceMicrosPerMTokIn: 100_000_000,
  priceMicrosPerMTokOut: 100_000_000,
  quality: 5,
  jurisdiction: { domicile: 'US', region: 'us-east' },
};

let vendor: MockVendor;
let gw: Gateway;
let secret = '';
let receiver: Receiver;

test.before(async () => {
  receiver = await startReceiver(() => secret);
  vendor = await startMockVendor();
  gw = await startGateway(vendor, { models: [...CATALOGUE, PRICEY] }, FAST);
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
  await receiver.close();
});

test('a budget reaching nudge and then downgrade sends one signed budget.advisory for each step', async (t) => {
  t.timeout(60_000);
  const hook = expectStatus(
    await gw.owner.send('POST', '/webhooks', { url: receiver.url, events: ['budget.advisory'] }),
    201,
    'endpoint',
  );
  secret = hook.body.secret;
  const admin = await gw.key({ scope: 'admin' });
  const made = await call(gw.server.url, 'POST', '/v1/admin/budgets', {
    headers: bearer(admin),
    json: {
      scope: { kind: 'team', id: 'advised' },
      amountMicros: 1000,
      period: 'day',
      ladder: [
        { at: 0.5, step: 'nudge' },
        { at: 0.8, step: 'downgrade' },
        { at: 1, step: 'block' },
      ],
    },
  });
  t.is(made.status, 201, made.text);
  const key = await gw.key({ defaultTaskClass: 'general', team: 'advised' });
  const ask = () =>
    call(gw.server.url, 'POST', '/v1/chat/completions', {
      headers: { ...bearer(key), 'x-svc-objective': 'quality' },
      json: { model: 'pricey', messages: user('hello'), max_tokens: 3 },
    });

  const enforcement: string[] = [];
  for (let i = 0; i < 3; i += 1) enforcement.push(String((await ask()).headers['x-svc-enforcement']));
  // 600 of 1000 spent before the third call: it was nudged.
  t.deepEqual(enforcement, ['observe', 'observe', 'nudge']);
  await until('the nudge advisory', () =>
    receiver.state.received.some((r) => r.type === 'budget.advisory' && r.status === 200),
  );
  for (let i = 0; i < 2; i += 1) enforcement.push(String((await ask()).headers['x-svc-enforcement']));
  // 900 spent: the next calls are downgraded (to a cheaper model).
  t.deepEqual(enforcement.slice(3), ['downgrade', 'downgrade']);
  await until('the downgrade advisory', () => new Set(receiver.state.received.map((r) => r.id)).size >= 2);
  // One more pass of the dispatcher: whatever else was due (a duplicate, a third event) is sent now.
  await gw.server.app.services.webhooks.dispatch();

  const events = [...new Map(receiver.state.received.map((r) => [r.id, JSON.parse(r.body)])).values()];
  t.is(events.length, 2, 'one event per step, however many calls were nudged');
  t.true(receiver.state.received.every((r) => r.verified && r.type === 'budget.advisory'));
  t.deepEqual(
    events.map((e) => e.data.step),
    ['nudge', 'downgrade'],
  );
  t.like(events[0], {
    type: 'budget.advisory',
    workspaceId: gw.server.boot.workspaceId,
    data: { budgetId: made.body.id, scope: 'team:advised', period: 'day', amountMicros: 1000 },
  });
  t.regex(events[0].id, /^evt_[0-9A-Za-z]{22}$/);
  t.regex(events[0].data.message, /of the day budget of team:advised is used/);
  // Not a ledger record: the ledger has no budget.advisory.
  t.false((await gw.owner.ledger()).some((r) => String(r.kind).includes('advisory')));
});
