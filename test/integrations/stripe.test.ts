import test from 'ava';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import Stripe from 'stripe';
import { addPerson, makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { expectStatus, otherWorkspace, ownerConsole, type Person } from '../helpers/console.js';
import { PAY_ACME, payment } from '../helpers/gate.js';
import { assertError, bearer, call, type Json, type Reply } from '../helpers/http.js';
import { inProcessServer, serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';

/**
 * The payment provider (Stripe Issuing and Billing): deliveries signed by the stripe
 * package's own test signer (`webhooks.generateTestHeaderString`) over the raw bytes; an
 * authorization request decided by the gate as the card's agent and answered in Stripe's
 * synchronous shape; transactions reconciled like the issuer's charges; subscriptions setting the
 * workspace's plan, which lifts the free plan's allowances (here SVC_PLAN_AGENTS=2), only when
 * signed with the operator's billing secret (SVC_BILLING_STRIPE_SIGNING_SECRET) and bound to the
 * workspace; the operator's one billing endpoint (`/v1/hooks/stripe/billing`) routing each
 * billing event to the workspace its subscription names; and every forged, stale, altered,
 * unsigned or replayed delivery changing nothing.
 */
const API_VERSION = '2025-03-31.basil';
let server: ServedInProcess;
let owner: Person;
let billing: Bot;
let ops: Bot;
let secret: string;
let wid: string;
const billingSecret = `whsec_billing_${randomBytes(18).toString('base64url')}`;

const now = () => Math.floor(Date.now() / 1000);
const sign = (key: string, payload: string, timestamp = now()) =>
  Stripe.webhooks.generateTestHeaderString({ payload, secret: key, timestamp });
let sequence = 0;
const eventId = () => `evt_test${Date.now()}x${(sequence += 1)}`;
const stripeEvent = (type: string, object: Record<string, unknown>, fields: Record<string, unknown> = {}) => ({
  id: eventId(),
  object: 'event',
  api_version: API_VERSION,
  created: now(),
  livemode: false,
  pending_webhooks: 1,
  request: { id: null, idempotency_key: null },
  type,
  data: { object },
  ...fields,
});
const merchantData = {
  name: 'Acme',
  url: 'https://acme.example',
  category: 'computer_software_stores',
  category_code: '5734',
  city: 'Berlin',
  country: 'DE',
  network_id: '1234567890',
  postal_code: '10115',
  state: null,
};
const authorization = (fields: Record<string, unknown> = {}) =>
  stripeEvent('issuing_authorization.request', {
    id: `iauth_${sequence}`,
    object: 'issuing.authorization',
    amount: 0,
    approved: false,
    currency: 'eur',
    status: 'pending',
    card: { id: 'ic_billing', object: 'issuing.card', last4: '4242' },
    cardholder: 'ich_1',
    merchant_data: merchantData,
    pending_request: {
      amount: 1250,
      currency: 'eur',
      is_amount_controllable: false,
      merchant_amount: 1250,
      merchant_currency: 'eur',
    },
    ...fields,
  });
const transaction = (amount: number, fields: Record<string, unknown> = {}) =>
  stripeEvent('issuing_transaction.created', {
    id: `ipi_${Date.now()}x${(sequence += 1)}`,
    object: 'issuing.transaction',
    amount,
    currency: 'eur',
    type: amount < 0 ? 'capture' : 'refund',
    card: 'ic_billing',
    cardholder: 'ich_1',
    authorization: 'iauth_1',
    merchant_amount: amount,
    merchant_currency: 'eur',
    merchant_data: merchantData,
    created: now(),
    ...fields,
  });
const subscription = (type: string, fields: Record<string, unknown>, created = now()) =>
  stripeEvent(
    type,
    {
      id: 'sub_pro',
      object: 'subscription',
      customer: 'cus_1',
      status: 'active',
      metadata: { workspaceId: wid },
      items: {
        object: 'list',
        data: [
          {
            id: 'si_1',
            object: 'subscription_item',
            current_period_end: created + 30 * 86_400,
            price: { id: 'price_1', object: 'price', lookup_key: 'pro' },
          },
        ],
      },
      ...fields,
    },
    { created },
  );

async function deliver(body: string, headers: Record<string, string>): Promise<Reply> {
  return call(server.url, 'POST', `/v1/hooks/stripe/${wid}`, {
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}
/** A billing event as the operator's endpoint signs it. */
const billed = (e: unknown) => signed(e, billingSecret);
const signed = (e: unknown, key = secret) => {
  const body = JSON.stringify(e);
  return deliver(body, { 'stripe-signature': sign(key, body) });
};
/** A delivery to the operator's billing endpoint; `hub` signs it with the billing secret (or `key`). */
const toBilling = (body: string, headers: Record<string, string>): Promise<Reply> =>
  call(server.url, 'POST', '/v1/hooks/stripe/billing', {
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
const hub = (e: unknown, key = billingSecret, timestamp = now()) => {
  const body = JSON.stringify(e);
  return toBilling(body, { 'stripe-signature': sign(key, body, timestamp) });
};
/** The second workspace (one per server: its owner's email is fixed). */
let second: Person | undefined;
const otherOne = async () => (second ??= await otherWorkspace(server));
const charges = async (card = 'ic_billing') =>
  (await owner.get(`/stripe/cards/${card}/charges`)).body.data as Array<Record<string, Json>>;

/** What a refused delivery must leave as it was: the ledger, the card's charges, the plan. */
async function snapshot(): Promise<string> {
  const ledger = await owner.ledger();
  const plan = await owner.get('/plan');
  return JSON.stringify({ ledger: ledger.length, charges: await charges(), plan: plan.body });
}
/** The same of both workspaces (the second's ledger and plan). */
async function both(): Promise<string> {
  const other = await otherOne();
  return JSON.stringify({
    a: await snapshot(),
    b: { ledger: (await other.ledger()).length, plan: (await other.get('/plan')).body },
  });
}
const refusedOf = async (person: Person) =>
  (await person.get('/integrations')).body.data.find((v: { kind: string }) => v.kind === 'stripe').refused as number;

test.before(async () => {
  server = await serveInProcess({
    env: { ...SERVER_ENV, SVC_PLAN_AGENTS: '2', SVC_BILLING_STRIPE_SIGNING_SECRET: billingSecret },
  });
  owner = await ownerConsole(server);
  wid = server.boot.workspaceId!;
  billing = await makeBot(owner, 'billing-bot', [PAY_ACME]);
  ops = await makeBot(owner, 'ops-bot', [PAY_ACME]);
});

test.after.always(async () => {
  await stopAndClean(server);
});

test.serial('the signing secret is taken, never answered back, and needed', async (t) => {
  assertError(t, await owner.send('PUT', '/integrations/stripe', {}), 400, 'invalid_request');
  secret = `whsec_${randomBytes(24).toString('base64url')}`;
  const set = expectStatus(
    await owner.send('PUT', '/integrations/stripe', { signingSecret: secret }),
    200,
    'configure',
  );
  t.like(set.body, { kind: 'stripe', previousRetiresAt: null });
  t.false(set.text.includes(secret));
  const listed = await owner.get('/integrations');
  t.false(listed.text.includes(secret));
  t.like(
    listed.body.data.find((v: { kind: string }) => v.kind === 'stripe'),
    { kind: 'stripe', refused: 0 },
  );
});

test.serial(
  "an authorization request is decided by the gate as the card's agent, in Stripe's synchronous shape",
  async (t) => {
    expectStatus(await owner.send('PUT', '/stripe/cards/ic_billing', { agentId: billing.agentId }), 200, 'map');
    const ok = await signed(authorization());
    t.is(ok.status, 200, ok.text);
    t.is(ok.body.approved, true);
    t.is(ok.headers['stripe-version'], API_VERSION, 'Stripe requires the Stripe-Version header on the answer');
    t.regex(String(ok.headers['content-type']), /^application\/json/);
    t.regex(ok.body.metadata.svc_action_id, /^act_/);
    t.is(ok.body.metadata.svc_reason, 'allowed by the mandate');
    const action = await call(server.url, 'GET', `/v1/actions/${ok.body.metadata.svc_action_id}`, {
      headers: bearer(billing.key),
    });
    t.like(action.body, {
      decision: 'allow',
      type: 'payment',
      payment: { amount: 1250, currency: 'EUR', merchant: 'acme.example' },
    });

    // No pending_request: the top-level amount is the one asked.
    const plain = await signed(authorization({ pending_request: null, amount: 2000 }));
    t.is(plain.body.approved, true);

    const over = await signed(authorization({ pending_request: { amount: 9000, currency: 'eur' } }));
    t.is(over.body.approved, false);
    t.regex(over.body.metadata.svc_reason, /\S/);

    const elsewhere = await signed(
      authorization({ merchant_data: { ...merchantData, name: 'Elsewhere', url: 'https://elsewhere.example' } }),
    );
    t.is(elsewhere.body.approved, false);

    const unmapped = await signed(authorization({ card: { id: 'ic_nobody', object: 'issuing.card' } }));
    t.deepEqual(unmapped.body, {
      approved: false,
      metadata: { svc_reason: 'Card ic_nobody is not mapped to an agent.' },
    });
    const ledger = await owner.ledger();
    t.true(
      ledger.some(
        (r) =>
          r.kind === 'card.authorization_declined' && r.data.cardId === 'ic_nobody' && r.data.provider === 'stripe',
      ),
    );
  },
);

test.serial("a stopped agent's card is declined through Stripe Issuing", async (t) => {
  expectStatus(await owner.send('POST', `/agents/${billing.agentId}/stop`, { reason: 'card test' }), 200, 'stop');
  try {
    const res = await signed(authorization());
    t.is(res.body.approved, false);
    const action = await call(server.url, 'GET', `/v1/actions/${res.body.metadata.svc_action_id}`, {
      headers: bearer(billing.key),
    });
    t.true(action.body.signals.includes('agent_frozen'), JSON.stringify(action.body));
  } finally {
    expectStatus(await owner.send('POST', `/agents/${billing.agentId}/restart`), 200, 'restart');
  }
});

test.serial(
  'transactions are reconciled: a capture matching a payment is linked, one with none is flagged, a refund kept; remapping reconciles again',
  async (t) => {
    const auth = await signed(authorization({ pending_request: { amount: 3300, currency: 'eur' } }));
    t.true(auth.body.approved, auth.text);
    const paid = { body: { id: auth.body.metadata.svc_action_id as string } };
    // The same payment made by the agent itself, not through the card, claiming the card in its
    // metadata: it never settles a charge.
    expectStatus(
      await call(server.url, 'POST', '/v1/actions/authorize', {
        headers: bearer(billing.key),
        json: { ...payment(4444), metadata: { cardId: 'ic_billing', cardProvider: 'stripe' } },
      }),
      200,
      'agent pays itself',
    );
    // Stripe's sign: a capture takes money from the balance (negative), a refund gives it back.
    const matching = transaction(-3300);
    const stray = transaction(-4444);
    const refund = transaction(3300);
    t.deepEqual((await signed(matching)).body, { received: true });
    t.deepEqual((await signed(stray)).body, { received: true });
    t.deepEqual((await signed(refund)).body, { received: true });
    const imported = await charges();
    const byId = (e: { data: { object: Record<string, unknown> } }) =>
      imported.find((c) => c.eventId === e.data.object.id)!;
    t.like(byId(matching), {
      provider: 'stripe',
      kind: 'posted',
      amount: 3300,
      currency: 'EUR',
      actionId: paid.body.id,
      agentId: billing.agentId,
      merchant: { name: 'Acme', domain: 'acme.example', mcc: '5734' },
    });
    t.like(byId(stray), { kind: 'posted', amount: 4444, actionId: null });
    t.like(byId(refund), { kind: 'refunded', amount: 3300 });
    const ledger = await owner.ledger();
    t.true(
      ledger.some(
        (r) => r.kind === 'card.charge_unmatched' && r.subject === stray.data.object.id && r.data.provider === 'stripe',
      ),
    );
    t.true(
      ledger.some(
        (r) =>
          r.kind === 'card.charge_matched' && r.subject === matching.data.object.id && r.data.actionId === paid.body.id,
      ),
    );
    t.true(ledger.some((r) => r.kind === 'card.charge_refunded' && r.subject === refund.data.object.id));

    expectStatus(await owner.send('PUT', '/stripe/cards/ic_billing', { agentId: ops.agentId }), 200, 'remap');
    const again = await charges();
    t.deepEqual(
      again.filter((c) => c.kind === 'posted').map((c) => [c.actionId, c.agentId]),
      [
        [null, ops.agentId],
        [null, ops.agentId],
      ],
    );
    const after = await owner.ledger();
    const remapped = after.filter((r) => r.index > ledger.at(-1)!.index && r.kind.startsWith('card.charge_'));
    // Only the charge whose match changed is recorded again; the stray stays unmatched, unrecorded.
    t.deepEqual(
      remapped.map((r) => [r.kind, r.subject]),
      [['card.charge_unmatched', matching.data.object.id]],
    );
    const back = expectStatus(
      await owner.send('PUT', '/stripe/cards/ic_billing', { agentId: billing.agentId }),
      200,
      'map back',
    );
    t.deepEqual(back.body, { cardId: 'ic_billing', agentId: billing.agentId });
    t.is((await charges()).find((c) => c.eventId === matching.data.object.id)!.actionId, paid.body.id);
    const last = (await owner.ledger()).filter(
      (r) => r.index > after.at(-1)!.index && r.kind.startsWith('card.charge_'),
    );
    t.deepEqual(
      last.map((r) => [r.kind, r.subject]),
      [['card.charge_matched', matching.data.object.id]],
    );
  },
);

test.serial(
  "two cards of one agent: a charge on one never settles the other's payment, and an action settles one charge",
  async (t) => {
    expectStatus(await owner.send('PUT', '/stripe/cards/ic_second', { agentId: billing.agentId }), 200, 'second card');
    const auth = await signed(authorization({ pending_request: { amount: 2100, currency: 'eur' } }));
    t.true(auth.body.approved, auth.text);
    const actionId = auth.body.metadata.svc_action_id as string;
    // A charge of the same amount and merchant on the second card: not the payment made with the first.
    const other = transaction(-2100, { card: 'ic_second' });
    t.deepEqual((await signed(other)).body, { received: true });
    t.like(
      (await charges('ic_second')).find((c) => c.eventId === other.data.object.id),
      { actionId: null, agentId: billing.agentId },
    );
    t.true(
      (await owner.ledger()).some(
        (r) =>
          r.kind === 'card.charge_unmatched' && r.subject === other.data.object.id && r.data.cardId === 'ic_second',
      ),
    );
    // The first card's charges: the first settles the payment, a second of the same kind is flagged.
    const first = transaction(-2100);
    const twice = transaction(-2100);
    await signed(first);
    await signed(twice);
    const own = await charges();
    t.is(own.find((c) => c.eventId === first.data.object.id)!.actionId, actionId);
    t.is(own.find((c) => c.eventId === twice.data.object.id)!.actionId, null);
    // Remapping the second card to the same agent again records nothing new.
    const before = (await owner.ledger()).length;
    expectStatus(await owner.send('PUT', '/stripe/cards/ic_second', { agentId: billing.agentId }), 200, 'remap same');
    t.deepEqual(
      (await owner.ledger()).slice(before).map((r) => r.kind),
      ['card.mapped'],
    );
  },
);

test.serial('cards of the issuer and of Stripe never mix, even under one id', async (t) => {
  expectStatus(await owner.send('PUT', '/stripe/cards/card_shared', { agentId: billing.agentId }), 200, 'stripe map');
  expectStatus(await owner.send('PUT', '/issuer/cards/card_shared', { agentId: ops.agentId }), 200, 'issuer map');
  const stripeCards = (await owner.get('/stripe/cards')).body.data as Array<{
    cardId: string;
    agentId: string;
    provider: string;
  }>;
  const issuerCards = (await owner.get('/issuer/cards')).body.data as Array<{
    cardId: string;
    agentId: string;
    provider: string;
  }>;
  t.like(
    stripeCards.find((c) => c.cardId === 'card_shared'),
    { agentId: billing.agentId, provider: 'stripe' },
  );
  t.like(
    issuerCards.find((c) => c.cardId === 'card_shared'),
    { agentId: ops.agentId, provider: 'issuer' },
  );
  t.false(issuerCards.some((c) => c.cardId === 'ic_billing'));
  t.deepEqual((await owner.get('/issuer/cards/ic_billing/charges')).body.data, []);
});

test.serial('forged, stale, future, altered, unsigned, malformed and replayed deliveries change nothing', async (t) => {
  const before = await snapshot();
  const refusedBefore = (await owner.get('/integrations')).body.data.find((v: { kind: string }) => v.kind === 'stripe')
    .refused as number;
  const e = transaction(-777);
  const body = JSON.stringify(e);
  assertError(
    t,
    await deliver(body, { 'stripe-signature': sign('whsec_not-the-secret', body) }),
    401,
    'unauthenticated',
  );
  assertError(t, await deliver(body, { 'stripe-signature': sign(secret, body, now() - 301) }), 401, 'unauthenticated');
  assertError(t, await deliver(body, { 'stripe-signature': sign(secret, body, now() + 301) }), 401, 'unauthenticated');
  assertError(
    t,
    await deliver(body.replace('-777', '-778'), { 'stripe-signature': sign(secret, body) }),
    401,
    'unauthenticated',
  );
  assertError(t, await deliver(`${body} `, { 'stripe-signature': sign(secret, body) }), 401, 'unauthenticated');
  assertError(t, await deliver(body, {}), 401, 'unauthenticated');
  assertError(t, await deliver(body, { 'stripe-signature': `t=${now()}` }), 401, 'unauthenticated');
  // Signed for this workspace, sent to another's address.
  assertError(
    t,
    await call(server.url, 'POST', `/v1/hooks/stripe/ws_${'A'.repeat(22)}`, {
      headers: { 'content-type': 'application/json', 'stripe-signature': sign(secret, body) },
      body,
    }),
    401,
    'unauthenticated',
  );
  t.is(await snapshot(), before, 'nothing was stored or recorded');
  const refused = (await owner.get('/integrations')).body.data.find((v: { kind: string }) => v.kind === 'stripe')
    .refused as number;
  t.is(refused - refusedBefore, 7);

  const first = await deliver(body, { 'stripe-signature': sign(secret, body) });
  t.deepEqual(first.body, { received: true });
  const once = await snapshot();
  t.not(once, before);
  // Stripe retries with the same event re-signed later: the first answer, and nothing more.
  t.deepEqual((await deliver(body, { 'stripe-signature': sign(secret, body) })).body, { received: true });
  t.deepEqual((await deliver(body, { 'stripe-signature': sign(secret, body, now() + 5) })).body, { received: true });
  t.is(await snapshot(), once);
});

test.serial(
  'a redelivered authorization request gets the first answer, the same action, and its Stripe-Version',
  async (t) => {
    const e = authorization({ pending_request: { amount: 1500, currency: 'eur' } });
    const first = await signed(e);
    const again = await signed(e);
    t.deepEqual(again.body, first.body);
    t.is(again.headers['stripe-version'], API_VERSION);
    const actions = (await owner.ledger()).filter(
      (r) => r.kind.startsWith('action.') && r.data.payment?.amount === 1500,
    );
    t.is(actions.length, 1);
  },
);

test.serial(
  'a signed body that is not JSON, or not a Stripe event, is refused by field and changes nothing',
  async (t) => {
    const before = await snapshot();
    assertError(t, await deliver('not json', { 'stripe-signature': sign(secret, 'not json') }), 400, 'invalid_json');
    const bad = JSON.stringify({ ...transaction(-5), id: 'not-an-event', created: 'yesterday' });
    const res = await deliver(bad, { 'stripe-signature': sign(secret, bad) });
    assertError(t, res, 400, 'invalid_request');
    t.deepEqual(res.body.error.errors.map((e: { field: string }) => e.field).sort(), ['created', 'id']);
    const noCard = JSON.stringify(authorization({ card: null }));
    assertError(t, await deliver(noCard, { 'stripe-signature': sign(secret, noCard) }), 400, 'invalid_request');
    t.is(await snapshot(), before);
    // An event of a type not read here is received and changes nothing.
    t.deepEqual((await signed(stripeEvent('charge.succeeded', { id: 'ch_1', object: 'charge' }))).body, {
      received: true,
    });
    t.is(await snapshot(), before);
  },
);

test.serial(
  "subscriptions set the workspace's plan, which lifts the free plan's allowances; an older event changes nothing",
  async (t) => {
    t.like((await owner.get('/plan')).body, {
      plan: 'free',
      paid: false,
      allowances: { agents: 2 },
      subscription: null,
    });
    assertError(t, await owner.send('POST', '/agents', { name: 'third-bot' }), 402, 'plan_limit_reached');

    const created = now();
    expectStatus(
      await billed(subscription('customer.subscription.created', { status: 'trialing' }, created)),
      200,
      'created',
    );
    const pro = (await owner.get('/plan')).body;
    t.like(pro, {
      plan: 'pro',
      paid: true,
      allowances: { agents: null, mandateRules: null, monthlyRequests: null, people: null },
    });
    t.like(pro.subscription, {
      plan: 'pro',
      status: 'trialing',
      subscriptionId: 'sub_pro',
      customerId: 'cus_1',
      eventCreated: created,
      lastPaymentFailedAt: null,
    });
    t.is(pro.subscription.currentPeriodEnd, new Date((created + 30 * 86_400) * 1000).toISOString());
    const third = expectStatus(
      await owner.send('POST', '/agents', { name: 'third-bot' }),
      201,
      'third agent on a paid plan',
    );
    t.truthy(third.body.id);

    // A payment fails: Stripe retries, the subscription is past_due, still paid.
    expectStatus(
      await billed(
        stripeEvent(
          'invoice.payment_failed',
          { id: 'in_1', object: 'invoice', parent: { subscription_details: { subscription: 'sub_pro' } } },
          { created: created + 1 },
        ),
      ),
      200,
      'payment failed',
    );
    expectStatus(
      await billed(subscription('customer.subscription.updated', { status: 'past_due' }, created + 2)),
      200,
      'past due',
    );
    const pastDue = (await owner.get('/plan')).body;
    t.like(pastDue, { plan: 'pro', paid: true, subscription: { status: 'past_due' } });
    t.truthy(pastDue.subscription.lastPaymentFailedAt);

    // An older event arriving late (Stripe does not promise order) changes nothing.
    const before = await snapshot();
    t.deepEqual(
      (await billed(subscription('customer.subscription.updated', { status: 'canceled' }, created - 60))).body,
      { received: true },
    );
    t.is(await snapshot(), before);

    // The subscription ends: the free plan's allowances hold again.
    expectStatus(
      await billed(subscription('customer.subscription.deleted', { status: 'canceled' }, created + 3)),
      200,
      'deleted',
    );
    t.like((await owner.get('/plan')).body, {
      plan: 'free',
      paid: false,
      allowances: { agents: 2 },
      subscription: { plan: 'pro', status: 'canceled' },
    });
    assertError(t, await owner.send('POST', '/agents', { name: 'fourth-bot' }), 402, 'plan_limit_reached');

    const changes = (await owner.ledger()).filter((r) => r.kind === 'plan.changed');
    t.deepEqual(
      changes.map((r) => [r.data.plan, r.data.status, r.data.paid]),
      [
        ['pro', 'trialing', true],
        ['pro', 'past_due', true],
        ['pro', 'canceled', false],
      ],
    );
    t.true((await owner.ledger()).some((r) => r.kind === 'plan.payment_failed' && r.subject === 'sub_pro'));

    // The plan's name may come from the subscription's metadata instead of a price lookup key.
    expectStatus(
      await billed(
        subscription(
          'customer.subscription.created',
          {
            id: 'sub_team',
            status: 'active',
            metadata: { plan: 'team', workspaceId: wid },
            items: { data: [{ price: { id: 'price_2', lookup_key: null } }] },
          },
          created + 4,
        ),
      ),
      200,
      'team',
    );
    t.like((await owner.get('/plan')).body, { plan: 'team', paid: true, subscription: { subscriptionId: 'sub_team' } });
    // The end of the replaced subscription does not end the new one.
    expectStatus(
      await billed(subscription('customer.subscription.deleted', { status: 'canceled' }, created + 5)),
      200,
      'old one deleted',
    );
    t.like((await owner.get('/plan')).body, { plan: 'team', paid: true });
  },
);

test.serial("another workspace's Stripe secret is refused on this workspace's route, whatever it signs", async (t) => {
  const other = await otherOne();
  const otherSecret = `whsec_${randomBytes(24).toString('base64url')}`;
  expectStatus(
    await other.send('PUT', '/integrations/stripe', { signingSecret: otherSecret }),
    200,
    'other configures',
  );
  const before = await snapshot();
  for (const e of [
    authorization(),
    transaction(-3300),
    subscription('customer.subscription.created', { id: 'sub_stolen', status: 'active' }),
  ]) {
    assertError(t, await signed(e, otherSecret), 401, 'unauthenticated');
  }
  t.is(await snapshot(), before, 'nothing was stored or recorded');
  // On its own route the other workspace's secret verifies; a billing event it signs changes no plan there either.
  const own = JSON.stringify(
    subscription('customer.subscription.created', {
      id: 'sub_other',
      status: 'active',
      metadata: { workspaceId: other.wid },
    }),
  );
  const res = await call(server.url, 'POST', `/v1/hooks/stripe/${other.wid}`, {
    headers: { 'content-type': 'application/json', 'stripe-signature': sign(otherSecret, own) },
    body: own,
  });
  t.is(res.status, 200, res.text);
  t.like((await other.get('/plan')).body, { plan: 'free', paid: false, subscription: null });
});

test.serial(
  "billing events signed with the workspace's own secret change no plan; the operator's bound elsewhere are ignored unrecorded",
  async (t) => {
    // The earlier test's events are dated up to a few seconds ahead: this one comes after them.
    expectStatus(
      await billed(
        subscription(
          'customer.subscription.deleted',
          { id: 'sub_team', status: 'canceled', metadata: { plan: 'team', workspaceId: wid } },
          now() + 60,
        ),
      ),
      200,
      'end team',
    );
    t.like((await owner.get('/plan')).body, { plan: 'free', paid: false });
    const lift = subscription('customer.subscription.created', { id: 'sub_self', status: 'active' });
    const res = await signed(lift);
    t.is(res.status, 200, res.text);
    t.like(res.body, { received: true });
    t.regex(res.body.ignored, /operator's billing secret/);
    t.like((await owner.get('/plan')).body, { plan: 'free', paid: false });
    const ignored = (await owner.ledger()).filter((r) => r.kind === 'plan.event_ignored' && r.subject === lift.id);
    t.is(ignored.length, 1);
    // A redelivery is answered the same and recorded once.
    t.deepEqual((await signed(lift)).body, res.body);
    t.is((await owner.ledger()).filter((r) => r.kind === 'plan.event_ignored' && r.subject === lift.id).length, 1);
    const failed = await signed(
      stripeEvent('invoice.payment_failed', {
        id: 'in_2',
        object: 'invoice',
        parent: { subscription_details: { subscription: 'sub_pro', metadata: { workspaceId: wid } } },
      }),
    );
    t.like(failed.body, { received: true });
    t.truthy(failed.body.ignored);

    // Signed by the operator but for another workspace, or for none: received, nothing stored or recorded here.
    const before = await snapshot();
    const elsewhere = await billed(
      subscription('customer.subscription.created', {
        id: 'sub_elsewhere',
        status: 'active',
        metadata: { workspaceId: `ws_${'B'.repeat(22)}` },
      }),
    );
    t.deepEqual(elsewhere.body, { received: true });
    t.deepEqual(
      (
        await billed(
          subscription('customer.subscription.created', { id: 'sub_unbound', status: 'active', metadata: {} }),
        )
      ).body,
      { received: true },
    );
    t.is(await snapshot(), before);

    // Issuing events must carry the workspace's own signature: the operator's alone is refused.
    assertError(t, await billed(authorization()), 403, 'forbidden');
    t.is(await snapshot(), before);
  },
);

test.serial(
  'created and updated in the same second end paid, in either order; a deleted subscription is final',
  async (t) => {
    const at = now();
    // Stripe sends the update (active) before the creation (incomplete) of the same second.
    expectStatus(
      await billed(subscription('customer.subscription.updated', { id: 'sub_a', status: 'active' }, at)),
      200,
      'a updated',
    );
    expectStatus(
      await billed(subscription('customer.subscription.created', { id: 'sub_a', status: 'incomplete' }, at)),
      200,
      'a created',
    );
    t.like((await owner.get('/plan')).body, {
      plan: 'pro',
      paid: true,
      subscription: { subscriptionId: 'sub_a', status: 'active' },
    });
    expectStatus(
      await billed(subscription('customer.subscription.deleted', { id: 'sub_a', status: 'canceled' }, at + 1)),
      200,
      'a deleted',
    );
    t.like((await owner.get('/plan')).body, { plan: 'free', paid: false });
    // Nothing revives a deleted subscription, not even a later update.
    expectStatus(
      await billed(subscription('customer.subscription.updated', { id: 'sub_a', status: 'active' }, at + 2)),
      200,
      'a after deletion',
    );
    t.like((await owner.get('/plan')).body, { plan: 'free', paid: false });

    // In the order they were made.
    expectStatus(
      await billed(subscription('customer.subscription.created', { id: 'sub_b', status: 'incomplete' }, at)),
      200,
      'b created',
    );
    t.like((await owner.get('/plan')).body, { paid: false });
    expectStatus(
      await billed(subscription('customer.subscription.updated', { id: 'sub_b', status: 'active' }, at)),
      200,
      'b updated',
    );
    t.like((await owner.get('/plan')).body, {
      plan: 'pro',
      paid: true,
      subscription: { subscriptionId: 'sub_b', status: 'active' },
    });
  },
);

test.serial('a late update of another, replaced subscription does not downgrade the current one', async (t) => {
  const at = now();
  expectStatus(
    await billed(
      subscription(
        'customer.subscription.updated',
        { id: 'sub_old', status: 'unpaid', metadata: { plan: 'starter', workspaceId: wid } },
        at + 5,
      ),
    ),
    200,
    'old unpaid',
  );
  expectStatus(
    await billed(
      subscription(
        'customer.subscription.deleted',
        { id: 'sub_old', status: 'canceled', metadata: { plan: 'starter', workspaceId: wid } },
        at + 6,
      ),
    ),
    200,
    'old deleted',
  );
  t.like((await owner.get('/plan')).body, {
    plan: 'pro',
    paid: true,
    subscription: { subscriptionId: 'sub_b', status: 'active' },
  });
  const changed = (await owner.ledger()).filter((r) => r.kind === 'plan.changed' && r.subject === 'sub_old');
  t.deepEqual(
    changed.map((r) => r.data.workspace.after),
    [
      { plan: 'pro', paid: true },
      { plan: 'pro', paid: true },
    ],
  );
});

test.serial(
  'a created far in the future, or a date past any calendar, is refused with 400 and changes nothing',
  async (t) => {
    const before = await snapshot();
    const ahead = await billed(
      subscription('customer.subscription.updated', { id: 'sub_b', status: 'canceled' }, now() + 3600),
    );
    assertError(t, ahead, 400, 'invalid_request');
    t.deepEqual(
      ahead.body.error.errors.map((e: { field: string }) => e.field),
      ['created'],
    );
    for (const [e, key] of [
      [
        subscription('customer.subscription.updated', { id: 'sub_b', status: 'active' }, Number.MAX_SAFE_INTEGER),
        billingSecret,
      ],
      [
        subscription('customer.subscription.updated', {
          id: 'sub_b',
          status: 'active',
          current_period_end: 9e15,
          items: { data: [{ current_period_end: 9e15, price: { lookup_key: 'pro' } }] },
        }),
        billingSecret,
      ],
      [transaction(-100, { created: 9e15 }), secret],
      [transaction(-100, { created: now() + 3600 }), secret],
      [{ ...authorization(), created: now() + 3600 }, secret],
    ] as const) {
      const res = await signed(e, key);
      assertError(t, res, 400, 'invalid_request');
    }
    t.is(await snapshot(), before);
    t.like((await owner.get('/plan')).body, { plan: 'pro', paid: true });
  },
);

test.serial('a billing payload larger than 1 MB is taken (the route allows 5 MB); past that, 413', async (t) => {
  const big = subscription(
    'customer.subscription.updated',
    {
      id: 'sub_team',
      status: 'active',
      metadata: { plan: 'team', workspaceId: wid },
      description: 'x'.repeat(1_500_000),
    },
    now() + 10,
  );
  const res = await billed(big);
  t.is(res.status, 200, res.text.slice(0, 300));
  const huge = JSON.stringify({ ...big, id: eventId(), padding: 'x'.repeat(5 * 1_048_576) });
  assertError(t, await deliver(huge, { 'stripe-signature': sign(secret, huge) }), 413, 'body_too_large');
});

test.serial('rotation: a new signing secret verifies at once and the old one for 24 hours', async (t) => {
  const fresh = `whsec_${randomBytes(24).toString('base64url')}`;
  const rotated = expectStatus(
    await owner.send('PUT', '/integrations/stripe', { signingSecret: fresh }),
    200,
    'rotate',
  );
  t.false(rotated.text.includes(fresh));
  const retires = Date.parse(rotated.body.previousRetiresAt) - Date.now();
  t.true(retires > 23.9 * 3_600_000 && retires <= 24 * 3_600_000);
  t.is((await signed(transaction(-10), fresh)).status, 200);
  t.is((await signed(transaction(-11), secret)).status, 200);
  t.is((await signed(transaction(-12), 'whsec_neither-of-them')).status, 401);
  const view = (await owner.get('/integrations')).body.data.find((v: { kind: string }) => v.kind === 'stripe');
  t.is(view.secrets.length, 2);
  secret = fresh;
});

test.serial(
  'whatever the Stripe-Signature header holds, the answer is 401, never a failure of the server',
  async (t) => {
    const body = JSON.stringify(transaction(-1));
    const header = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc
        .array(
          fc.tuple(
            fc.constantFrom('t', 'v1', 'v0', 'x', ''),
            fc.oneof(
              fc.string({ maxLength: 80 }),
              fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }),
              fc.integer().map(String),
            ),
          ),
          { maxLength: 6 },
        )
        .map((parts) => parts.map(([k, v]) => `${k}=${v}`).join(',')),
    );
    await t.notThrowsAsync(
      fc.assert(
        fc.asyncProperty(header, async (value) => {
          const res = await deliver(body, { 'stripe-signature': value.replace(/[\r\n]/g, '') });
          return res.status === 401 && res.body?.error?.type === 'unauthenticated';
        }),
        { numRuns: 80 },
      ),
    );
  },
);

test.serial('only owners and admins set the integration up, map cards and read the plan', async (t) => {
  const member = await addPerson(server, wid, 'member@stripe.example', 'member');
  const admin = await addPerson(server, wid, 'admin@stripe.example', 'admin');
  assertError(
    t,
    await member.send('PUT', '/integrations/stripe', { signingSecret: 'whsec_member-tries' }),
    403,
    'forbidden',
  );
  assertError(t, await member.send('PUT', '/stripe/cards/ic_x', { agentId: null }), 403, 'forbidden');
  assertError(t, await member.get('/stripe/cards'), 403, 'forbidden');
  assertError(t, await member.get('/plan'), 403, 'forbidden');
  t.deepEqual(expectStatus(await admin.send('PUT', '/stripe/cards/ic_x', { agentId: null }), 200, 'admin maps').body, {
    cardId: 'ic_x',
    agentId: null,
  });
  t.is((await admin.get('/plan')).status, 200);
  assertError(t, await owner.send('PUT', '/stripe/cards/ic_x', { agentId: 'agt_nope' }), 404, 'not_found');
});

test.serial(
  "the operator's billing endpoint routes each billing event to the workspace its subscription names, once",
  async (t) => {
    const other = await otherOne();
    const otherBefore = JSON.stringify({
      ledger: (await other.ledger()).length,
      plan: (await other.get('/plan')).body,
    });
    const otherNow = async () =>
      JSON.stringify({ ledger: (await other.ledger()).length, plan: (await other.get('/plan')).body });
    // Later than every event of the earlier tests, so this subscription names A's plan.
    const created = now() + 20;
    const forA = subscription(
      'customer.subscription.created',
      { id: 'sub_hub_a', status: 'active', items: { data: [{ price: { id: 'price_e', lookup_key: 'enterprise' } }] } },
      created,
    );
    const res = await hub(forA);
    t.is(res.status, 200, res.text);
    t.deepEqual(res.body, { received: true });
    t.like((await owner.get('/plan')).body, {
      plan: 'enterprise',
      paid: true,
      subscription: { subscriptionId: 'sub_hub_a', status: 'active' },
    });
    t.true(
      (await owner.ledger()).some(
        (r) => r.kind === 'plan.changed' && r.subject === 'sub_hub_a' && r.actor === 'stripe',
      ),
    );
    t.is(await otherNow(), otherBefore, "B's plan and ledger are untouched");

    // Replays of the event id: the first answer, nothing changed (re-signed later; even another body
    // under the same id; and the same event on A's own endpoint, which shares the operator's record).
    const applied = await snapshot();
    t.deepEqual((await hub(forA)).body, { received: true });
    t.deepEqual((await hub(forA, billingSecret, now() + 5)).body, { received: true });
    t.deepEqual((await hub({ ...forA, data: { object: { ...forA.data.object, status: 'canceled' } } })).body, {
      received: true,
    });
    t.deepEqual((await billed(forA)).body, { received: true });
    t.is(await snapshot(), applied);
    t.is(await otherNow(), otherBefore);

    // B's subscription changes B's plan, not A's.
    const forB = subscription(
      'customer.subscription.created',
      { id: 'sub_hub_b', status: 'active', metadata: { workspaceId: other.wid } },
      created,
    );
    t.deepEqual((await hub(forB)).body, { received: true });
    t.like((await other.get('/plan')).body, { plan: 'pro', paid: true, subscription: { subscriptionId: 'sub_hub_b' } });
    t.is(await snapshot(), applied, "A's plan and ledger are untouched");

    // A failed invoice: by its subscription's metadata, or (none) by the subscription a workspace has.
    const failedA = stripeEvent(
      'invoice.payment_failed',
      {
        id: 'in_hub_a',
        object: 'invoice',
        parent: { subscription_details: { subscription: 'sub_hub_a', metadata: { workspaceId: wid } } },
      },
      { created: created + 1 },
    );
    const failedB = stripeEvent(
      'invoice.payment_failed',
      { id: 'in_hub_b', object: 'invoice', subscription: 'sub_hub_b' },
      { created: created + 1 },
    );
    t.deepEqual((await hub(failedA)).body, { received: true });
    t.deepEqual((await hub(failedB)).body, { received: true });
    t.truthy((await owner.get('/plan')).body.subscription.lastPaymentFailedAt);
    t.truthy((await other.get('/plan')).body.subscription.lastPaymentFailedAt);
    const failures = async (p: Person) =>
      (await p.ledger())
        .filter((r) => r.kind === 'plan.payment_failed' && r.subject.startsWith('sub_hub_'))
        .map((r) => r.subject);
    t.deepEqual(await failures(owner), ['sub_hub_a']);
    t.deepEqual(await failures(other), ['sub_hub_b']);
  },
);

test.serial(
  'forged, stale, altered, unsigned or workspace-signed deliveries to the billing endpoint are 401, change nothing, and are counted under _',
  async (t) => {
    const other = await otherOne();
    const before = await both();
    const refused = [await refusedOf(owner), await refusedOf(other)];
    const e = subscription('customer.subscription.updated', { id: 'sub_hub_a', status: 'canceled' }, now() + 25);
    const body = JSON.stringify(e);
    const attempts: Array<[string, Record<string, string>, string?]> = [
      ["the workspace's own secret", { 'stripe-signature': sign(secret, body) }],
      ['a wrong secret', { 'stripe-signature': sign('whsec_not-the-billing-secret', body) }],
      ['a stale timestamp', { 'stripe-signature': sign(billingSecret, body, now() - 301) }],
      ['a future timestamp', { 'stripe-signature': sign(billingSecret, body, now() + 301) }],
      ['a changed byte', { 'stripe-signature': sign(billingSecret, body) }, body.replace('"canceled"', '"canceleD"')],
      ['a byte added', { 'stripe-signature': sign(billingSecret, body) }, `${body} `],
      ['no header', {}],
      ['a malformed header', { 'stripe-signature': `t=${now()}` }],
    ];
    for (const [what, headers, sent] of attempts) {
      const res = await toBilling(sent ?? body, headers);
      t.is(res.status, 401, `${what}: ${res.text}`);
      assertError(t, res, 401, 'unauthenticated');
    }
    t.is(await both(), before, 'nothing was stored or recorded in either workspace');
    t.deepEqual(
      [await refusedOf(owner), await refusedOf(other)],
      refused,
      'refusals are counted under _, not against a workspace',
    );
    // None of them used the event up: signed with the billing secret, it is applied.
    t.deepEqual((await hub(e)).body, { received: true });
    t.like(
      (await owner.get('/plan')).body,
      { plan: 'pro', paid: true, subscription: { subscriptionId: 'sub_b' } },
      'the earlier subscription names the plan again',
    );
    t.true(
      (await owner.ledger()).some(
        (r) => r.kind === 'plan.changed' && r.subject === 'sub_hub_a' && r.data.status === 'canceled',
      ),
    );
  },
);

test.serial(
  'the billing endpoint refuses Issuing events (403), takes other types unread, and ignores events bound to no workspace here',
  async (t) => {
    const other = await otherOne();
    const before = await both();
    assertError(t, await hub(authorization()), 403, 'forbidden');
    assertError(t, await hub(transaction(-500)), 403, 'forbidden');
    // Signed with the workspace's own secret they are not even verified here.
    assertError(t, await hub(authorization(), secret), 401, 'unauthenticated');
    t.deepEqual((await hub(stripeEvent('charge.succeeded', { id: 'ch_hub', object: 'charge' }))).body, {
      received: true,
    });
    t.is(await both(), before);

    const ignored = async (e: unknown, reason: RegExp) => {
      const res = await hub(e);
      t.is(res.status, 200, res.text);
      t.is(res.body.received, true);
      t.regex(String(res.body.ignored), reason);
    };
    await ignored(
      subscription('customer.subscription.created', { id: 'sub_hub_unbound', status: 'active', metadata: {} }),
      /names no workspace/,
    );
    await ignored(
      subscription('customer.subscription.created', { id: 'sub_hub_null', status: 'active', metadata: null }),
      /names no workspace/,
    );
    await ignored(
      subscription('customer.subscription.created', {
        id: 'sub_hub_empty',
        status: 'active',
        metadata: { workspaceId: '' },
      }),
      /names no workspace/,
    );
    await ignored(
      subscription('customer.subscription.created', {
        id: 'sub_hub_gone',
        status: 'active',
        metadata: { workspaceId: `ws_${'C'.repeat(22)}` },
      }),
      /does not exist/,
    );
    await ignored(
      subscription('customer.subscription.created', {
        id: 'sub_hub_junk',
        status: 'active',
        metadata: { workspaceId: 'x'.repeat(500) },
      }),
      /does not exist/,
    );
    await ignored(
      stripeEvent('invoice.payment_failed', {
        id: 'in_hub_gone',
        object: 'invoice',
        parent: {
          subscription_details: { subscription: 'sub_hub_a', metadata: { workspaceId: `ws_${'C'.repeat(22)}` } },
        },
      }),
      /does not exist/,
    );
    await ignored(
      stripeEvent('invoice.payment_failed', { id: 'in_hub_nobody', object: 'invoice', subscription: 'sub_nobody_has' }),
      /names no workspace/,
    );
    t.is(await both(), before, 'nothing was stored or recorded in either workspace');
    t.like((await other.get('/plan')).body, { subscription: { subscriptionId: 'sub_hub_b' } });
  },
);

test('hapi routes the literal /v1/hooks/stripe/billing before {wid}; with no billing secret configured it answers 401 to everything', async (t) => {
  // An in-process server with no billing secret (its environment is empty).
  const running = await inProcessServer();
  try {
    const s = running.http.server;
    await s.initialize();
    t.is(s.match('post', '/v1/hooks/stripe/billing')?.path, '/v1/hooks/stripe/billing');
    t.is(s.match('post', `/v1/hooks/stripe/ws_${'A'.repeat(22)}`)?.path, '/v1/hooks/stripe/{wid}');
    const body = JSON.stringify(
      stripeEvent('customer.subscription.created', {
        id: 'sub_x',
        object: 'subscription',
        customer: 'cus_x',
        status: 'active',
        metadata: { workspaceId: `ws_${'A'.repeat(22)}` },
      }),
    );
    for (const headers of [
      { 'stripe-signature': sign(billingSecret, body) },
      { 'stripe-signature': sign('whsec_anything', body) },
      { 'stripe-signature': 'garbage' },
      {},
    ]) {
      const res = await s.inject({
        method: 'POST',
        url: '/v1/hooks/stripe/billing',
        headers: { 'content-type': 'application/json', ...headers },
        payload: body,
        remoteAddress: '127.0.0.1',
      });
      t.is(res.statusCode, 401, res.payload);
      const error = JSON.parse(res.payload).error;
      t.is(error.type, 'unauthenticated');
      t.regex(error.message, /no billing signing secret is configured/);
    }
  } finally {
    await running.close();
  }
});
