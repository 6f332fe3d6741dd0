import { createHash } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import { call, bearer, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { authorize } from '../helpers/gate.js';
import { manualClock } from '../helpers/clock.js';
import {
  ACTION_ID,
  APPROVAL_ID,
  assertDenied,
  decodeReceipt,
  getAction,
  makeAgent,
  recordsBy,
  type Agent,
} from './support.js';

/**
 * 402 payment challenges decided first (docs/payment-challenges.md): POST /v1/actions/authorize
 * with `challenge` in place of `payment`. An x402 v2 PAYMENT-REQUIRED value or an MPP
 * `WWW-Authenticate: Payment` value is read into the payment (payee, amount in the mandate's
 * currency's minor units, asset, network or method), decided like any payment (mandate, limits,
 * approvals, kill switch), and an allowed payment's receipt carries `challengeHash`. A challenge
 * svc cannot read is 400 naming `challenge.value`, and nothing is stored.
 */

const USDC_BASE = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const EURC_BASE = '0x60a3E35Cc302bFA44Cb288Bc5a4F316Fdb1adb42';
const PAY_TO = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C';
const SELLER = 'api.seller.example';

/** A PAYMENT-REQUIRED value as an x402 v2 server sends it: base64 of the JSON. */
function x402Value(accepts: Array<Record<string, unknown>>, url = `https://${SELLER}/v1/report`): string {
  const required = {
    x402Version: 2,
    error: 'PAYMENT-SIGNATURE header is required',
    resource: { url, description: 'A report', mimeType: 'application/json' },
    accepts,
  };
  return Buffer.from(JSON.stringify(required)).toString('base64');
}

const usdc = (amount: string, extra: Record<string, unknown> = {}) => ({
  scheme: 'exact',
  network: 'eip155:8453',
  amount,
  asset: USDC_BASE,
  payTo: PAY_TO,
  maxTimeoutSeconds: 60,
  extra: { name: 'USD Coin', version: '2' },
  ...extra,
});

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** A WWW-Authenticate value with one MPP Payment challenge. */
function mppValue(request: Record<string, unknown>, params: Record<string, string> = {}): string {
  const all: Record<string, string> = {
    id: 'x7Tg2pLqR9mKvNwY3hBcZa',
    realm: SELLER,
    method: 'tempo',
    intent: 'charge',
    expires: new Date(Date.now() + 300_000).toISOString(),
    request: b64url(request),
    ...params,
  };
  return `Payment ${Object.entries(all)
    .map(([k, v]) => `${k}="${v}"`)
    .join(', ')}`;
}

const challengeBody = (
  scheme: string,
  value: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> => ({
  type: 'payment',
  summary: 'Pay for the report the API asked payment for',
  challenge: { scheme, value },
  ...extra,
});

const sha256url = (s: string) => createHash('sha256').update(s).digest('base64url');

let server: ServedInProcess;
let buyer: Agent;
let euroBuyer: Agent;
/** The agent of the refusals, which asks nothing else: its ledger count must not move. */
let refusedBuyer: Agent;

test.before(async () => {
  server = await serveInProcess();
  buyer = await makeAgent(
    server,
    [
      {
        actions: ['payment'],
        merchants: [SELLER],
        currencies: ['USD'],
        maxAmount: 5000,
        approval: { above: 3000 },
      },
    ],
    'x402-buyer',
  );
  euroBuyer = await makeAgent(
    server,
    [{ actions: ['payment'], merchants: [SELLER], currencies: ['EUR'], maxAmount: 5000 }],
    'eurc-buyer',
  );
  refusedBuyer = await makeAgent(
    server,
    [{ actions: ['payment'], merchants: [SELLER], currencies: ['USD'], maxAmount: 5000 }],
    'refused-buyer',
  );
});

test.after.always(() => stopAndClean(server));

test('an x402 challenge within the mandate is allowed; the receipt carries the challenge hash', async (t) => {
  // 12.50 USDC: 12,500,000 base units (6 decimals) = 1,250 cents.
  const value = x402Value([usdc('12500000')]);
  const res = await authorize(server, buyer.key, challengeBody('x402', value));
  t.is(res.status, 200, res.text);
  t.regex(res.body.id, ACTION_ID);
  t.is(res.body.decision, 'allow');
  t.deepEqual(res.body.payment, { amount: 1250, currency: 'USD', merchant: SELLER });
  t.deepEqual(res.body.challenge, {
    scheme: 'x402',
    hash: sha256url(value),
    payee: PAY_TO,
    asset: USDC_BASE,
    network: 'eip155:8453',
    assetAmount: '12500000',
  });
  const { claims } = decodeReceipt(t, res.body.receipt);
  t.is(claims.challengeHash, sha256url(value));
  t.is(claims.amt, 1250);
  t.is(claims.cur, 'USD');
  t.is(claims.mer, SELLER);
  // Verified online, the claim is kept.
  const verified = await call(server.url, 'POST', '/v1/verify', { json: { receipt: res.body.receipt } });
  t.is(verified.status, 200, verified.text);
  t.is(verified.body.claims.challengeHash, sha256url(value));
  // Stored as answered, and in the ledger with the challenge.
  t.deepEqual((await getAction(server, buyer.key, res.body.id)).body, res.body);
  const record = (await recordsBy(server, buyer)).find((r) => r.subject === res.body.id)!;
  t.is((record.data as { challenge: { hash: string } }).challenge.hash, sha256url(value));
});

test('an x402 challenge over the mandate is denied like any payment, with no receipt', async (t) => {
  const res = await authorize(server, buyer.key, challengeBody('x402', x402Value([usdc('60000000')])));
  t.is(res.status, 200, res.text);
  t.is(res.body.decision, 'deny');
  t.deepEqual(res.body.payment, { amount: 6000, currency: 'USD', merchant: SELLER });
  t.is(res.body.receipt, null);
});

test('an x402 challenge above the approval threshold waits for a person', async (t) => {
  const res = await authorize(server, buyer.key, challengeBody('x402', x402Value([usdc('40000000')])));
  t.is(res.status, 200, res.text);
  t.is(res.body.decision, 'review');
  t.is(res.body.status, 'pending_approval');
  t.regex(res.body.approvalId, APPROVAL_ID);
});

test('the first option svc can convert is decided; an unknown one before it is passed over', async (t) => {
  const value = x402Value([usdc('1000000', { asset: '0x0000000000000000000000000000000000000001' }), usdc('2000000')]);
  const res = await authorize(server, buyer.key, challengeBody('x402', value));
  t.is(res.status, 200, res.text);
  t.is(res.body.payment.amount, 200);
  t.is(res.body.challenge.assetAmount, '2000000');
});

test('EURC counts in euros (gate.assetCurrencies default)', async (t) => {
  const value = x402Value([usdc('2500000', { asset: EURC_BASE })]);
  const res = await authorize(server, euroBuyer.key, challengeBody('x402', value));
  t.is(res.status, 200, res.text);
  t.is(res.body.decision, 'allow');
  t.deepEqual(res.body.payment, { amount: 250, currency: 'EUR', merchant: SELLER });
});

test('an MPP Payment challenge in USDC is read from its request and decided', async (t) => {
  const value = mppValue({ amount: '2500000', currency: 'usdc', recipient: '0xabc123' });
  const res = await authorize(server, buyer.key, challengeBody('mpp', value));
  t.is(res.status, 200, res.text);
  t.is(res.body.decision, 'allow');
  t.deepEqual(res.body.payment, { amount: 250, currency: 'USD', merchant: SELLER });
  t.like(res.body.challenge, { scheme: 'mpp', payee: '0xabc123', asset: 'usdc', network: 'tempo' });
  t.is(decodeReceipt(t, res.body.receipt).claims.challengeHash, sha256url(value));
});

test('an MPP challenge in a fiat currency counts its base units as minor units', async (t) => {
  const value = `Bearer realm="other", ${mppValue({ amount: '1999', currency: 'usd', recipient: 'acct_123' }, { method: 'stripe' })}`;
  const res = await authorize(server, buyer.key, challengeBody('mpp', value));
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.payment, { amount: 1999, currency: 'USD', merchant: SELLER });
  t.is(res.body.challenge.network, 'stripe');
});

test('a stopped agent is denied a challenge like any payment (agent_frozen)', async (t) => {
  const fx = await makeAgent(
    server,
    [{ actions: ['payment'], merchants: [SELLER], currencies: ['USD'], maxAmount: 5000 }],
    'stopped-buyer',
  );
  await server.app.store.write(async () => {
    const agent = (await server.app.store.tables.agents.get([fx.wid, fx.agentId]))!;
    await server.app.store.tables.agents.put([fx.wid, fx.agentId], {
      ...agent,
      holds: [{ hold: 'owner', reason: 'drill', by: 'test', at: new Date().toISOString() }],
    });
  });
  const res = await authorize(server, fx.key, challengeBody('x402', x402Value([usdc('1000000')])));
  await assertDenied(t, server, fx, res, 'agent_frozen');
});

/** 400 invalid_request naming `field`, with nothing recorded for the agent. */
async function refused(t: ExecutionContext, body: unknown, field: string | null, message: RegExp): Promise<Reply> {
  const before = (await recordsBy(server, refusedBuyer)).length;
  const res = await authorize(server, refusedBuyer.key, body);
  t.is(res.status, 400, res.text);
  t.is(res.body.error.type, 'invalid_request');
  const errors = res.body.error.errors as Array<{ field: string | null; message: string }>;
  t.true(
    errors.some((e) => e.field === field && message.test(e.message)),
    JSON.stringify(errors),
  );
  t.is((await recordsBy(server, refusedBuyer)).length, before, 'nothing is recorded');
  return res;
}

const REFUSALS: Array<[string, unknown, string | null, RegExp]> = [
  ['not base64', challengeBody('x402', 'not base64!'), 'challenge.value', /not base64/],
  ['base64 of text', challengeBody('x402', Buffer.from('hello').toString('base64')), 'challenge.value', /not base64/],
  [
    'an x402 v1 payload',
    challengeBody('x402', Buffer.from(JSON.stringify({ x402Version: 1, accepts: [] })).toString('base64')),
    'challenge.value',
    /version 2/,
  ],
  ['no accepts', challengeBody('x402', x402Value([])), 'challenge.value', /accepts/],
  [
    'an unknown asset',
    challengeBody('x402', x402Value([usdc('1000000', { asset: '0x0000000000000000000000000000000000000001' })])),
    'challenge.value',
    /not one svc knows/,
  ],
  [
    'USDC on a network where that address is not USDC',
    challengeBody('x402', x402Value([usdc('1000000', { network: 'eip155:1' })])),
    'challenge.value',
    /not one svc knows/,
  ],
  [
    'an amount that is not whole cents',
    challengeBody('x402', x402Value([usdc('1234567')])),
    'challenge.value',
    /not a whole number of USD minor units/,
  ],
  ['a zero amount', challengeBody('x402', x402Value([usdc('0')])), 'challenge.value', /above zero/],
  [
    'an amount too large',
    challengeBody('x402', x402Value([usdc(`${'9'.repeat(30)}000000`)])),
    'challenge.value',
    /too large/,
  ],
  ['a negative amount', challengeBody('x402', x402Value([usdc('-1000000')])), 'challenge.value', /whole number/],
  [
    'a resource that is not a domain',
    challengeBody('x402', x402Value([usdc('1000000')], 'urn:x402:report')),
    'challenge.value',
    /not a domain name/,
  ],
  ['an oversized value', challengeBody('x402', 'A'.repeat(16_385)), 'challenge.value', /16384/],
  ['a control character', challengeBody('x402', 'AAAA\u0000'), 'challenge.value', /printable ASCII/],
  ['an unknown scheme', challengeBody('lightning', 'AAAA'), 'challenge.scheme', /x402 or mpp/],
  [
    'payment and challenge both',
    challengeBody('x402', 'AAAA', { payment: { amount: 1, currency: 'USD', merchant: SELLER } }),
    null,
    /not both/,
  ],
  ['no Payment challenge', challengeBody('mpp', 'Bearer realm="x"'), 'challenge.value', /no Payment challenge/],
  [
    'an MPP intent svc does not decide',
    challengeBody('mpp', mppValue({ amount: '1', currency: 'usd' }, { intent: 'session' })),
    'challenge.value',
    /charge only/,
  ],
  [
    'an expired MPP challenge',
    challengeBody('mpp', mppValue({ amount: '100', currency: 'usd' }, { expires: '2020-01-01T00:00:00Z' })),
    'challenge.value',
    /expired/,
  ],
  [
    'an MPP challenge without an id',
    challengeBody('mpp', mppValue({ amount: '100', currency: 'usd' }, { id: '' })),
    'challenge.value',
    /no id/,
  ],
  [
    'an MPP request that is not JSON',
    challengeBody('mpp', `Payment id="a", realm="${SELLER}", method="tempo", intent="charge", request="bm90IGpzb24"`),
    'challenge.value',
    /not base64url of JSON/,
  ],
  [
    'an MPP request without a currency',
    challengeBody('mpp', mppValue({ amount: '100' })),
    'challenge.value',
    /no currency/,
  ],
  [
    'an unterminated quoted string',
    challengeBody('mpp', 'Payment id="abc, realm=x'),
    'challenge.value',
    /unterminated/,
  ],
  ['a parameter given twice', challengeBody('mpp', 'Payment id="a", id="b"'), 'challenge.value', /twice/],
  [
    'an unknown MPP token',
    challengeBody('mpp', mppValue({ amount: '100', currency: '0x20c0000000000000000000000000000000000001' })),
    'challenge.value',
    /not one svc knows/,
  ],
];

for (const [name, body, field, message] of REFUSALS) {
  test(`refused, nothing stored: ${name}`, async (t) => {
    await refused(t, body, field, message);
  });
}

test('a payment action needs a payment or a challenge', async (t) => {
  const res = await call(server.url, 'POST', '/v1/actions/authorize', {
    headers: bearer(buyer.key),
    json: { type: 'payment', summary: 'Pay' },
  });
  t.is(res.status, 400, res.text);
  t.regex(res.text, /challenge/);
});

test('gate.assetCurrencies decides which currency a token counts in; an idempotent retry outlives the challenge', async (t) => {
  const clock = manualClock();
  const other = await serveInProcess({ clock, config: { gate: { assetCurrencies: { USDC: 'EUR', PYUSD: 'USD' } } } });
  try {
    const fx = await makeAgent(
      other,
      [{ actions: ['payment'], merchants: [SELLER], currencies: ['EUR', 'USD'], maxAmount: 5000 }],
      'configured-buyer',
    );
    // USDC counts in euros here, and EURC is not mapped at all.
    const usd = await authorize(other, fx.key, challengeBody('x402', x402Value([usdc('1500000')])));
    t.is(usd.status, 200, usd.text);
    t.deepEqual(usd.body.payment, { amount: 150, currency: 'EUR', merchant: SELLER });
    const eurc = await authorize(
      other,
      fx.key,
      challengeBody('x402', x402Value([usdc('1500000', { asset: EURC_BASE })])),
    );
    t.is(eurc.status, 400, eurc.text);
    // A token named by its symbol in the setting.
    const pyusd = await authorize(
      other,
      fx.key,
      challengeBody(
        'mpp',
        mppValue(
          { amount: '990000', currency: 'PYUSD', recipient: '0xfeed' },
          { expires: new Date(clock.now() + 60_000).toISOString() },
        ),
      ),
    );
    t.is(pyusd.status, 200, pyusd.text);
    t.deepEqual(pyusd.body.payment, { amount: 99, currency: 'USD', merchant: SELLER });

    // Decided under an idempotency key; the challenge then expires; the same retry is the first action again.
    const body = challengeBody(
      'mpp',
      mppValue(
        { amount: '100', currency: 'usd', recipient: 'acct_9' },
        { expires: new Date(clock.now() + 60_000).toISOString() },
      ),
      { idempotencyKey: 'pay-once-402' },
    );
    const first = await authorize(other, fx.key, body);
    t.is(first.status, 200, first.text);
    clock.advance(120_000);
    const again = await authorize(other, fx.key, body);
    t.is(again.status, 200, again.text);
    t.is(again.body.id, first.body.id);
    const { idempotencyKey: _key, ...unkeyed } = body;
    const expired = await authorize(other, fx.key, unkeyed);
    t.is(expired.status, 400, expired.text);
    t.regex(expired.text, /expired/);
  } finally {
    await stopAndClean(other);
  }
});

test('gate.assetCurrencies is checked at start: a currency that is not three letters is refused', async (t) => {
  await t.throwsAsync(serveInProcess({ config: { gate: { assetCurrencies: { USDC: 'dollars' } } } }), {
    message: /assetCurrencies/,
  });
});
