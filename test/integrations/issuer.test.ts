import test from 'ava';
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { PAY_ACME, payment } from '../helpers/gate.js';
import { assertError, bearer, call, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * The generic card issuer (issue 8): deliveries signed with `svc-signature` over the
 * raw bytes (signed here by the published scheme, with node:crypto), an authorization request
 * decided by the gate as the card's agent, posted charges reconciled against the agent's allowed
 * payments, and every forged, stale, altered, unsigned or replayed delivery changing nothing.
 */
let server: ServedInProcess;
let owner: Person;
let billing: Bot;
let ops: Bot;
let secret: string;
let wid: string;

const now = () => Math.floor(Date.now() / 1000);
const sign = (key: string, body: string, t = now()) =>
  `t=${t},v1=${createHmac('sha256', key).update(`${t}.${body}`).digest('hex')}`;
let sequence = 0;
const event = (type: string, fields: Record<string, unknown> = {}) => ({
  id: `evt_${Date.now()}_${(sequence += 1)}`,
  type,
  cardId: 'card_billing',
  amount: 1250,
  currency: 'EUR',
  merchant: { name: 'Acme', domain: 'acme.example', mcc: '5734' },
  createdAt: new Date().toISOString(),
  ...fields,
});

async function deliver(body: string, headers: Record<string, string>): Promise<Reply> {
  return call(server.url, 'POST', `/v1/hooks/issuer/${wid}`, {
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}
const signed = (e: unknown, key = secret) => {
  const body = JSON.stringify(e);
  return deliver(body, { 'svc-signature': sign(key, body) });
};

/** What a refused delivery must leave as it was: the ledger and the card's charges. */
async function snapshot(): Promise<string> {
  const ledger = await owner.ledger();
  const charges = await owner.get('/issuer/cards/card_billing/charges');
  return JSON.stringify({ ledger: ledger.length, charges: charges.body.data });
}

test.before(async () => {
  server = await serveInProcess({ env: SERVER_ENV });
  owner = await ownerConsole(server);
  wid = server.boot.workspaceId!;
  billing = await makeBot(owner, 'billing-bot', [PAY_ACME]);
  ops = await makeBot(owner, 'ops-bot', [PAY_ACME]);
});

test.after.always(async () => {
  await stopAndClean(server);
});

test.serial('the issuer integration answers its secret once; setting it up again needs rotate', async (t) => {
  const first = expectStatus(await owner.send('PUT', '/integrations/issuer', {}), 200, 'configure');
  t.regex(first.body.secret, /^whs_[A-Za-z0-9_-]{43}$/);
  t.is(first.body.previousRetiresAt, null);
  secret = first.body.secret;
  assertError(t, await owner.send('PUT', '/integrations/issuer', {}), 400, 'invalid_request');
  const listed = await owner.get('/integrations');
  t.false(listed.text.includes(secret), 'the secret is never shown again');
  t.like(listed.body.data[0], { kind: 'issuer', refused: 0 });
  assertError(t, await owner.send('PUT', '/integrations/stripe', {}), 400, 'invalid_request');
});

test.serial("an authorization request is decided by the gate as the card's agent", async (t) => {
  expectStatus(await owner.send('PUT', '/issuer/cards/card_billing', { agentId: billing.agentId }), 200, 'map');
  const ok = await signed(event('authorization.request'));
  t.is(ok.status, 200, ok.text);
  t.is(ok.body.approved, true);
  t.regex(ok.body.actionId, /^act_/);
  const action = await call(server.url, 'GET', `/v1/actions/${ok.body.actionId}`, { headers: bearer(billing.key) });
  t.like(action.body, {
    decision: 'allow',
    type: 'payment',
    payment: { amount: 1250, currency: 'EUR', merchant: 'acme.example' },
  });

  const over = await signed(event('authorization.request', { amount: 9000 }));
  t.like(over.body, { approved: false });
  t.regex(over.body.reason, /\S/);
  const unmapped = await signed(event('authorization.request', { cardId: 'card_nobody' }));
  t.deepEqual(unmapped.body, {
    approved: false,
    actionId: null,
    reason: 'Card card_nobody is not mapped to an agent.',
  });
});

test.serial(
  'a card authorization that a rule sends to a person is declined at once, and no approval is left waiting',
  async (t) => {
    const { reviewRule } = await import('../approvals/support.js');
    const careful = await makeBot(owner, 'careful-bot', [reviewRule()]);
    expectStatus(await owner.send('PUT', '/issuer/cards/card_careful', { agentId: careful.agentId }), 200, 'map');
    const res = await signed(event('authorization.request', { cardId: 'card_careful', amount: 3000 }));
    t.is(res.status, 200, res.text);
    t.is(res.body.approved, false);
    t.regex(res.body.reason, /cannot wait for a person/);
    const action = await call(server.url, 'GET', `/v1/actions/${res.body.actionId}`, { headers: bearer(careful.key) });
    t.like(action.body, { decision: 'deny', status: 'denied', approvalId: null });
    t.true(action.body.signals.includes('approval_unavailable'));
    const pending = (await owner.get('/approvals?status=pending')).body.data as Array<{ actionId: string }>;
    t.false(
      pending.some((a) => a.actionId === res.body.actionId),
      'no approval opened that the card network could never hear of',
    );
  },
);

test.serial("a stopped agent's card is declined by the issuer webhook", async (t) => {
  expectStatus(await owner.send('POST', `/agents/${billing.agentId}/stop`, { reason: 'card test' }), 200, 'stop');
  try {
    const res = await signed(event('authorization.request'));
    t.is(res.body.approved, false);
    const action = await call(server.url, 'GET', `/v1/actions/${res.body.actionId}`, { headers: bearer(billing.key) });
    t.true(action.body.signals.includes('agent_frozen'), JSON.stringify(action.body));
  } finally {
    expectStatus(await owner.send('POST', `/agents/${billing.agentId}/restart`), 200, 'restart');
  }
});

test.serial(
  'posted charges are reconciled: a match is linked to its action, a charge with none is flagged; remapping reconciles again',
  async (t) => {
    // The payment made through the card settles its charge; the same payment made by the agent
    // itself (even naming the card in its metadata) settles none.
    const through = await signed(event('authorization.request', { amount: 3300 }));
    t.true(through.body.approved, through.text);
    const paid = { body: { id: through.body.actionId as string } };
    expectStatus(
      await call(server.url, 'POST', '/v1/actions/authorize', {
        headers: bearer(billing.key),
        json: { ...payment(4444), metadata: { cardId: 'card_billing', cardProvider: 'issuer' } },
      }),
      200,
      'agent pays itself',
    );
    const matching = event('charge.posted', { amount: 3300 });
    const stray = event('charge.posted', { amount: 4444 });
    t.deepEqual((await signed(matching)).body, { received: true });
    t.deepEqual((await signed(stray)).body, { received: true });
    const charges = (await owner.get('/issuer/cards/card_billing/charges')).body.data as Array<{
      eventId: string;
      actionId: string | null;
    }>;
    t.is(charges.find((c) => c.eventId === matching.id)?.actionId, paid.body.id);
    t.is(charges.find((c) => c.eventId === stray.id)?.actionId, null);
    const ledger = await owner.ledger();
    t.true(ledger.some((r) => r.kind === 'card.charge_unmatched' && r.subject === stray.id));
    t.true(
      ledger.some(
        (r) => r.kind === 'card.charge_matched' && r.subject === matching.id && r.data.actionId === paid.body.id,
      ),
    );

    // The card now belongs to another agent, which never made that payment: both charges are flagged.
    expectStatus(await owner.send('PUT', '/issuer/cards/card_billing', { agentId: ops.agentId }), 200, 'remap');
    const again = (await owner.get('/issuer/cards/card_billing/charges')).body.data as Array<{
      eventId: string;
      actionId: string | null;
      agentId: string;
    }>;
    t.deepEqual(
      again.filter((c) => [matching.id, stray.id].includes(c.eventId)).map((c) => [c.actionId, c.agentId]),
      [
        [null, ops.agentId],
        [null, ops.agentId],
      ],
    );
    const after = await owner.ledger();
    // Only the charge whose match changed is recorded again (no flood of ledger records and webhooks).
    t.deepEqual(
      after
        .filter((r) => r.index > ledger.at(-1)!.index && r.kind.startsWith('card.charge_'))
        .map((r) => [r.kind, r.subject]),
      [['card.charge_unmatched', matching.id]],
    );
    expectStatus(await owner.send('PUT', '/issuer/cards/card_billing', { agentId: billing.agentId }), 200, 'map back');
  },
);

test.serial("duplicate deliveries of an unmapped card's request at once: one answer, one ledger record", async (t) => {
  const e = event('authorization.request', { cardId: 'card_unmapped_twice' });
  const answers = await Promise.all(Array.from({ length: 6 }, () => signed(e)));
  for (const res of answers) t.deepEqual(res.body, answers[0]!.body);
  t.like(answers[0]!.body, { approved: false, actionId: null });
  const declines = (await owner.ledger()).filter((r) => r.kind === 'card.authorization_declined' && r.subject === e.id);
  t.is(declines.length, 1);
});

test.serial('forged, stale, altered, unsigned and replayed deliveries change nothing', async (t) => {
  const before = await snapshot();
  const e = event('charge.posted', { amount: 777 });
  const body = JSON.stringify(e);
  assertError(t, await deliver(body, { 'svc-signature': sign('whs_not-the-secret', body) }), 401, 'unauthenticated');
  assertError(t, await deliver(body, { 'svc-signature': sign(secret, body, now() - 301) }), 401, 'unauthenticated');
  assertError(
    t,
    await deliver(body.replace('777', '778'), { 'svc-signature': sign(secret, body) }),
    401,
    'unauthenticated',
  );
  assertError(t, await deliver(body, {}), 401, 'unauthenticated');
  t.is(await snapshot(), before, 'nothing was stored or recorded');
  t.like((await owner.get('/integrations')).body.data[0], { refused: 4 });

  const first = await deliver(body, { 'svc-signature': sign(secret, body) });
  t.deepEqual(first.body, { received: true });
  const once = await snapshot();
  t.not(once, before);
  // The same delivery again (as an issuer retries), and re-signed later: the first answer, and nothing more.
  t.deepEqual((await deliver(body, { 'svc-signature': sign(secret, body) })).body, { received: true });
  t.deepEqual((await deliver(body, { 'svc-signature': sign(secret, body, now() + 5) })).body, { received: true });
  t.is(await snapshot(), once);
});

test.serial('a signed body that is not JSON, or not an event, is refused by field and changes nothing', async (t) => {
  const before = await snapshot();
  assertError(t, await deliver('not json', { 'svc-signature': sign(secret, 'not json') }), 400, 'invalid_json');
  const bad = JSON.stringify({ ...event('charge.posted'), amount: -5, currency: 'euro' });
  const res = await deliver(bad, { 'svc-signature': sign(secret, bad) });
  assertError(t, res, 400, 'invalid_request');
  t.deepEqual(res.body.error.errors.map((e: { field: string }) => e.field).sort(), ['amount', 'currency']);
  t.is(await snapshot(), before);
});

test.serial('a redelivered authorization request gets the first answer and the same action', async (t) => {
  const e = event('authorization.request', { amount: 1500 });
  const first = await signed(e);
  const again = await signed(e);
  t.deepEqual(again.body, first.body);
  const actions = (await owner.ledger()).filter((r) => r.kind.startsWith('action.') && r.data.payment?.amount === 1500);
  t.is(actions.length, 1);
});

test.serial('rotation: the new secret verifies at once and the old one for 24 hours', async (t) => {
  const rotated = expectStatus(await owner.send('PUT', '/integrations/issuer', { rotate: true }), 200, 'rotate');
  t.not(rotated.body.secret, secret);
  const retires = Date.parse(rotated.body.previousRetiresAt) - Date.now();
  t.true(retires > 23.9 * 3_600_000 && retires <= 24 * 3_600_000);
  t.is((await signed(event('charge.refunded'), rotated.body.secret)).status, 200);
  t.is((await signed(event('charge.refunded'), secret)).status, 200);
  const view = (await owner.get('/integrations')).body.data[0];
  t.is(view.secrets.length, 2);
  secret = rotated.body.secret;
});

test.serial(
  "whatever the card issuer's signature header holds, the answer is 401, never a failure of the server",
  async (t) => {
    await t.notThrowsAsync(
      fc.assert(
        fc.asyncProperty(fc.string({ maxLength: 200 }), async (header) => {
          const res = await deliver('{}', { 'svc-signature': header.replace(/[\r\n]/g, '') });
          return res.status === 401 && res.body?.error?.type === 'unauthenticated';
        }),
        { numRuns: 60 },
      ),
    );
  },
);

test.serial('only owners and admins set integrations up and map cards', async (t) => {
  const { addPerson } = await import('../approvals/support.js');
  const member = await addPerson(server, wid, 'member@cards.example', 'member');
  assertError(t, await member.send('PUT', '/integrations/issuer', { rotate: true }), 403, 'forbidden');
  assertError(t, await member.send('PUT', '/issuer/cards/card_x', { agentId: null }), 403, 'forbidden');
  assertError(t, await owner.send('PUT', '/issuer/cards/card_x', { agentId: 'agt_nope' }), 404, 'not_found');
});
