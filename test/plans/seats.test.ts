import test from 'ava';
import { expectStatus } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { manualClock } from '../helpers/clock.js';
import { until } from '../helpers/receiver.js';
import { startGateway, user, type Gateway } from '../gateway/support.js';

/**
 * The free plan's people limit: a workspace past plan.people keeps its model
 * traffic for the grace period, then gets 402 seat_limit_reached until it is back within it.
 */
let vendor: MockVendor;
let gw: Gateway;
let key: string;
const clock = manualClock();

const chat = () =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: bearer(key),
    json: { model: 'small', messages: user('hello') },
  });

test.before(async () => {
  vendor = await startMockVendor();
  // A grace period of about 1.7 seconds, on a clock the test moves.
  gw = await startGateway(vendor, {}, { SVC_PLAN_PEOPLE: '1', SVC_PLAN_SEAT_GRACE_DAYS: '0.00002' }, { clock });
  key = await gw.key({ defaultTaskClass: 'general' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

test.serial(
  'past the people limit: served during the grace period, then 402 seat_limit_reached, and served again once back within it',
  async (t) => {
    t.is((await chat()).status, 200, 'within the limit');
    const added = expectStatus(
      await gw.owner.send('POST', '/members', {
        email: 'second@example.com',
        name: 'Second',
        role: 'member',
        password: 'a-long-password-1',
      }),
      201,
      'member',
    );
    t.is((await chat()).status, 200, 'past the limit, the grace period starts');
    t.is((await chat()).status, 200, 'still within the grace period');
    // The mark of when the workspace went past the limit is written beside the answer.
    const wid = gw.server.boot.workspaceId!;
    await until('the overage mark', () => gw.server.app.store.tables.seatOverage.has(wid));
    clock.advance(2000);
    const before = vendor.count();
    const refused = await chat();
    assertError(t, refused, 402, 'seat_limit_reached');
    t.regex(refused.body.error.message, /allows 1 people/);
    t.is(vendor.count(), before, 'nothing was sent');
    expectStatus(await gw.owner.send('DELETE', `/members/${added.body.id}`), 200, 'remove');
    t.is((await chat()).status, 200, 'back within the limit');
  },
);
