import test from 'ava';
import { call } from '../helpers/http.js';
import { authorize, payment } from '../helpers/gate.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { makeAgent, settle, type Agent } from './support.js';

/**
 * Review: a cancelled or failed settlement gives the amount back to the period (README), but the
 * receipt signed for the action stays valid, online too (valid: true, replayed: false). The agent
 * settles its own actions, with no check, so a rogue agent can loop authorize -> cancel and
 * collect receipts for any multiple of its period limit, each one a merchant verifies as genuine.
 * What the receipts vouch for must stay within the mandate's period limit.
 */

const LIMIT = 5000;
let server: ServedInProcess;
let fx: Agent;

test.before(async () => {
  server = await serveInProcess();
  fx = await makeAgent(
    server,
    [
      {
        actions: ['payment'],
        merchants: ['acme.example'],
        currencies: ['EUR'],
        maxAmount: LIMIT,
        periodLimit: { amount: LIMIT, period: 'day' },
      },
    ],
    'looping-bot',
  );
});

test.after.always(() => stopAndClean(server));

async function collect(status: 'cancelled' | 'failed' | 'completed', amount?: number): Promise<number> {
  let vouched = 0;
  for (let i = 0; i < 4; i += 1) {
    const res = await authorize(server, fx.key, payment(LIMIT));
    if (res.body.decision !== 'allow') break;
    await settle(server, fx.key, res.body.id, amount === undefined ? { status } : { status, amount });
    // The merchant checks the receipt online, afterwards, as the receipt docs let it.
    const verified = await call(server.url, 'POST', '/v1/verify', { json: { receipt: res.body.receipt } });
    if (verified.body.valid === true && verified.body.replayed === false) vouched += verified.body.claims.amt as number;
  }
  return vouched;
}

test.serial('receipts of cancelled actions do not let valid receipts exceed the period limit', async (t) => {
  const vouched = await collect('cancelled');
  t.true(
    vouched <= LIMIT,
    `${vouched} EUR-cents of receipts verify valid and fresh online today, under a daily limit of ${LIMIT}`,
  );
});

test.serial('a completed settlement of 0 does not let a 5000 receipt be re-issued', async (t) => {
  const vouched = await collect('completed', 0);
  t.true(
    vouched <= LIMIT,
    `${vouched} EUR-cents of receipts verify valid and fresh online today, under a daily limit of ${LIMIT}`,
  );
});
