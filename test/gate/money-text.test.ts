import test, { type ExecutionContext } from 'ava';
import { createHmac } from 'node:crypto';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { manualClock } from '../helpers/clock.js';
import { expectStatus, ownerConsole, type LedgerRecord, type Person } from '../helpers/console.js';
import { authorize } from '../helpers/gate.js';
import { bearer, call, type Json } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';
import { startReceiver, until, type Receiver } from '../helpers/receiver.js';

/**
 * Money as people read it (issue 37): every reason the gate gives that names an amount shows it in
 * the currency's own units, never in minor units, in the action's answer, its ledger record, the
 * webhook event, the approval as the console lists it and the chat card: the approval line, the
 * per-action limit (with the highest limit of the covering rules), the period limit (with the
 * limit and what is used), the same limit met again when people approve, the approval a card
 * network cannot wait for, and a settlement above what was authorized. In EUR (two decimals), JPY
 * (none) and KWD (three), with the same minor units, so a text off by a power of ten shows.
 */

/** The minor units the scenarios use, as people must read them in each currency. */
const SHOWN: Record<string, Record<number, string>> = {
  EUR: {
    1000: 'EUR 10.00',
    1500: 'EUR 15.00',
    1600: 'EUR 16.00',
    2000: 'EUR 20.00',
    2500: 'EUR 25.00',
    5000: 'EUR 50.00',
    6000: 'EUR 60.00',
    7500: 'EUR 75.00',
    8000: 'EUR 80.00',
  },
  JPY: {
    1000: 'JPY 1,000',
    1500: 'JPY 1,500',
    1600: 'JPY 1,600',
    2000: 'JPY 2,000',
    2500: 'JPY 2,500',
    5000: 'JPY 5,000',
    6000: 'JPY 6,000',
    7500: 'JPY 7,500',
    8000: 'JPY 8,000',
  },
  KWD: {
    1000: 'KWD 1.000',
    1500: 'KWD 1.500',
    1600: 'KWD 1.600',
    2000: 'KWD 2.000',
    2500: 'KWD 2.500',
    5000: 'KWD 5.000',
    6000: 'KWD 6.000',
    7500: 'KWD 7.500',
    8000: 'KWD 8.000',
  },
};
const CURRENCIES = Object.keys(SHOWN);

const FAST = {
  ...SERVER_ENV,
  SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1',
  SVC_WEBHOOKS_TIMEOUT_MS: '2000',
  SVC_WEBHOOKS_BACKOFF_BASE_MS: '100',
  SVC_WEBHOOKS_BACKOFF_MAX_MS: '300',
  SVC_WEBHOOKS_DISPATCH_INTERVAL_MS: '50',
  SVC_WEBHOOKS_GIVE_UP_AFTER_MS: '120000',
};

// Time stands still: every period limit below counts within one UTC day.
const clock = manualClock();
let server: ServedInProcess;
let owner: Person;
let hooks: Receiver;
let relay: Receiver;
let hookSecret = '';
let relaySecret = '';
let issuerSecret = '';

test.before(async () => {
  hooks = await startReceiver(() => hookSecret);
  relay = await startReceiver(() => relaySecret);
  server = await serveInProcess({ env: FAST, clock });
  owner = await ownerConsole(server);
  const endpoint = expectStatus(
    await owner.send('POST', '/webhooks', {
      url: hooks.url,
      events: ['action.decided', 'approval.requested', 'approval.decided'],
    }),
    201,
    'webhook endpoint',
  );
  hookSecret = endpoint.body.secret;
  relaySecret = expectStatus(await owner.send('PUT', '/integrations/chat-relay', { url: relay.url }), 200, 'relay').body
    .secret;
  issuerSecret = expectStatus(await owner.send('PUT', '/integrations/issuer', {}), 200, 'issuer').body.secret;
});

test.after.always(async () => {
  await stopAndClean(server);
  await hooks.close();
  await relay.close();
});

const pay = (currency: string, amount: number, note: string) => ({
  type: 'payment',
  summary: `Pay Acme (${note})`,
  payment: { amount, currency, merchant: 'acme.example' },
});

/** One action's reason, as the agent, the ledger and the webhook receiver each read it, all equal to `expected`. */
async function reasonEverywhere(t: ExecutionContext, bot: Bot, actionId: string, expected: string): Promise<void> {
  const view = await call(server.url, 'GET', `/v1/actions/${actionId}`, { headers: bearer(bot.key) });
  t.is(view.body.reason, expected, 'the action, as the agent reads it');
  const records = (await owner.ledger()).filter((r: LedgerRecord) => r.subject === actionId);
  const last = records.at(-1)!;
  t.is((last.data as { reason?: string }).reason, expected, `the ledger record ${last.kind}`);
  let event: Json | undefined;
  await until(`the webhook of ${last.id}`, () => {
    const hit = hooks.state.received.find((r) => r.id === last.id);
    event = hit ? JSON.parse(hit.body) : undefined;
    return event !== undefined;
  });
  t.is(event!.data.reason, expected, `the webhook event ${event!.type}`);
}

/** What no text may say: the bare minor units next to the code, as the gate once wrote them. */
function noMinorUnits(t: ExecutionContext, text: string, currency: string, amounts: number[]): void {
  for (const amount of amounts) t.false(text.includes(`${amount} ${currency}`), text);
}

for (const currency of CURRENCIES) {
  const shown = SHOWN[currency]!;
  const rule = (extra: Record<string, unknown>) => ({
    actions: ['payment'],
    merchants: ['acme.example'],
    currencies: [currency],
    ...extra,
  });

  test(`${currency}: a per-action limit names the amount and the highest limit in ${currency}'s units`, async (t) => {
    const bot = await makeBot(owner, `over-${currency}`, [rule({ maxAmount: 3000 }), rule({ maxAmount: 5000 })]);
    const res = await authorize(server, bot.key, pay(currency, 6000, 'too much'));
    t.like(res.body, { decision: 'deny', signals: ['over_limit'] });
    const expected = `The amount ${shown[6000]} is over every covering rule's per-action limit (the highest is ${shown[5000]}).`;
    t.is(res.body.reason, expected);
    noMinorUnits(t, res.body.reason, currency, [6000, 5000]);
    await reasonEverywhere(t, bot, res.body.id, expected);
  });

  test(`${currency}: the approval line, the period limit and the settlement name amounts in ${currency}'s units`, async (t) => {
    const bot = await makeBot(owner, `pay-${currency}`, [
      rule({ maxAmount: 5000, periodLimit: { amount: 8000, period: 'day' }, approval: { above: 2000 } }),
    ]);
    const allowed = await authorize(server, bot.key, pay(currency, 1500, 'first'));
    t.is(allowed.body.decision, 'allow', allowed.text);

    // The approval line: the answer, the ledger, the webhook, the console's list, the chat card.
    const waiting = await authorize(server, bot.key, pay(currency, 2500, 'needs a person'));
    t.is(waiting.body.decision, 'review', waiting.text);
    const listed = expectStatus(await owner.get('/approvals?status=pending&limit=200'), 200, 'approvals');
    const approval = listed.body.data.find((a: { id: string }) => a.id === waiting.body.approvalId);
    const approvalReason = `Rule ${approval.rule.id} asks a person to approve amounts above ${shown[2000]}.`;
    t.is(waiting.body.reason, approvalReason);
    t.is(approval.action.reason, approvalReason, 'the approval, as the console lists it');
    await reasonEverywhere(t, bot, waiting.body.id, approvalReason);
    let card: Json | undefined;
    await until(`the chat card of ${waiting.body.approvalId}`, () => {
      card = relay.state.received
        .map((r) => JSON.parse(r.body))
        .find((c) => c.approval?.id === waiting.body.approvalId);
      return card !== undefined;
    });
    const fields = card!.slack.blocks[1].fields.map((f: { text: string }) => f.text);
    t.true(fields.includes(`Amount: ${shown[2500]}`), JSON.stringify(fields));
    t.is(card!.approval.amountText, shown[2500], "the card's text for a relay that renders its own");
    t.deepEqual(
      card!.approval.payment,
      { amount: 2500, currency, merchant: 'acme.example' },
      'machine fields keep minor units',
    );

    // A card network cannot wait for a person: the same approval line, in the decline's reason.
    expectStatus(
      await owner.send('PUT', `/issuer/cards/card_${currency}`, { agentId: bot.agentId }),
      200,
      'map the card',
    );
    const event = JSON.stringify({
      id: `evt_${currency}_1`,
      type: 'authorization.request',
      cardId: `card_${currency}`,
      amount: 2500,
      currency,
      merchant: { name: 'Acme', domain: 'acme.example', mcc: '5734' },
      createdAt: new Date(clock.now()).toISOString(),
    });
    const ts = Math.floor(clock.now() / 1000); // the server reads signatures against its own clock
    const declined = await call(server.url, 'POST', `/v1/hooks/issuer/${owner.wid}`, {
      headers: {
        'content-type': 'application/json',
        'svc-signature': `t=${ts},v1=${createHmac('sha256', issuerSecret).update(`${ts}.${event}`).digest('hex')}`,
      },
      body: event,
    });
    t.is(declined.body.approved, false, declined.text);
    const unavailable = `${approvalReason} This request must be answered at once and cannot wait for a person.`;
    t.is(declined.body.reason, unavailable);
    await reasonEverywhere(t, bot, declined.body.actionId, unavailable);

    // The period limit: 1,500 + 4 × 1,500 allowed, so 7,500 of 8,000 is used.
    for (let i = 0; i < 4; i += 1)
      t.is((await authorize(server, bot.key, pay(currency, 1500, `more ${i}`))).body.decision, 'allow');
    const over = await authorize(server, bot.key, pay(currency, 1000, 'one too many'));
    t.like(over.body, { decision: 'deny', signals: ['period_limit'] });
    const periodReason = (amount: number) =>
      `The amount ${shown[amount]} would take this period's total over the rule's limit (${shown[8000]} a day, of which ${shown[7500]} is used).`;
    t.is(over.body.reason, periodReason(1000));
    noMinorUnits(t, over.body.reason, currency, [1000, 8000, 7500]);
    await reasonEverywhere(t, bot, over.body.id, periodReason(1000));

    // Approved now, the waiting payment meets the same limit: the deny people see names it the same way.
    const decided = expectStatus(
      await owner.send('POST', `/approvals/${waiting.body.approvalId}/approve`, {}),
      200,
      'approve',
    );
    t.is(decided.body.status, 'denied', decided.text);
    t.is(decided.body.reason, periodReason(2500));
    await reasonEverywhere(t, bot, waiting.body.id, periodReason(2500));

    // A settlement above what was authorized.
    const settled = await call(server.url, 'POST', `/v1/actions/${allowed.body.id}/settle`, {
      headers: bearer(bot.key),
      json: { status: 'completed', amount: 1600 },
    });
    t.is(settled.status, 400, settled.text);
    t.is(
      settled.body.error.message,
      `The settled amount ${shown[1600]} is above the ${shown[1500]} that was authorized.`,
    );
  });
}
