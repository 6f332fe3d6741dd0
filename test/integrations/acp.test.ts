import test from 'ava';
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { makeBot, pay, type Bot } from '../approvals/support.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { bearer, call, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * A merchant's checkout events (the Agentic Commerce Protocol's webhooks, 2026-04-17) on
 * POST /v1/hooks/acp/{wid}: signed here as the specification says (Merchant-Signature,
 * HMAC-SHA256 over `<t>.<raw body>`, with node:crypto), recorded in the ledger and matched to the
 * decisions that named the checkout session; every unsigned, forged, stale, replayed or malformed
 * delivery refused with nothing recorded.
 */
let server: ServedInProcess;
let owner: Person;
let buyer: Bot;
let secret: string;
let wid: string;

const PAY_ACME = { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'] };
const now = () => Math.floor(Date.now() / 1000);
const hmac = (key: string, t: number, body: string) => createHmac('sha256', key).update(`${t}.${body}`).digest('hex');

function deliver(body: string, headers: Record<string, string>, to = wid): Promise<Reply> {
  return call(server.url, 'POST', `/v1/hooks/acp/${to}`, {
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}

/** Signed with the workspace's secret at `t` (now by default). */
function signed(body: string, t = now(), key = secret): Promise<Reply> {
  return deliver(body, { 'merchant-signature': `t=${t},v1=${hmac(key, t, body)}` });
}

let orders = 0;
const orderEvent = (session: string, type = 'order_create', extra: Record<string, unknown> = {}) => {
  orders += 1;
  return JSON.stringify({
    type,
    data: {
      type: 'order',
      id: `ord_${orders}`,
      checkout_session_id: session,
      permalink_url: `https://acme.example/orders/${orders}`,
      status: type === 'order_create' ? 'created' : 'shipped',
      currency: 'eur',
      line_items: [{ id: 'li_1', title: 'Paper', quantity: { ordered: 1, current: 1, fulfilled: 0 } }],
      totals: [
        { type: 'subtotal', display_text: 'Subtotal', amount: 1100 },
        { type: 'total', display_text: 'Total', amount: 1200 },
      ],
      ...extra,
    },
  });
};

async function acpRecords() {
  return (await owner.ledger()).filter((r) => r.kind.startsWith('acp.'));
}

test.before(async () => {
  server = await serveInProcess();
  owner = await ownerConsole(server);
  wid = server.boot.workspaceId!;
  buyer = await makeBot(owner, 'acp-buyer', [PAY_ACME]);
  secret = expectStatus(await owner.send('PUT', '/integrations/acp', {}), 200, 'configure').body.secret;
});

test.after.always(() => stopAndClean(server));

test.serial('an order event is recorded and matched to the decision that named its checkout session', async (t) => {
  const session = 'cs_01HV3P3ABC123';
  const decided = await call(server.url, 'POST', '/v1/actions/authorize', {
    headers: bearer(buyer.key),
    json: { ...pay(1200, 'paper'), metadata: { checkoutSessionId: session } },
  });
  t.is(decided.status, 200, decided.text);
  t.is(decided.body.decision, 'allow');

  const body = orderEvent(session);
  const t0 = now();
  const res = await deliver(body, {
    'merchant-signature': `t=${t0},v1=${hmac(secret, t0, body).toUpperCase()}`,
    'request-id': 'req_42',
  });
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, {
    received: true,
    checkout_session_id: session,
    actions: [decided.body.id],
    request_id: 'req_42',
  });

  const record = (await acpRecords()).find((r) => r.subject === session)!;
  t.truthy(record);
  t.is(record.kind, 'acp.order_create');
  t.is(record.actor, 'acp');
  t.like(record.data, {
    orderId: `ord_${orders}`,
    status: 'created',
    currency: 'EUR',
    total: 1200,
    actions: [decided.body.id],
  });

  const update = await signed(orderEvent(session, 'order_update'));
  t.is(update.status, 200, update.text);
  t.deepEqual(update.body.actions, [decided.body.id]);
  t.true((await acpRecords()).some((r) => r.kind === 'acp.order_update' && r.subject === session));
});

test.serial('an event for a session no decision named is recorded with no actions', async (t) => {
  const res = await signed(orderEvent('cs_unknown'));
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.actions, []);
});

/** A refusal: the status, the error type, and no acp record added. */
async function refused(
  t: import('ava').ExecutionContext,
  res: Promise<Reply>,
  status: number,
  message: RegExp,
  type = status === 401 ? 'unauthenticated' : 'invalid_request',
) {
  const before = (await acpRecords()).length;
  const r = await res;
  t.is(r.status, status, r.text);
  t.is(r.body.error.type, type);
  t.regex(JSON.stringify(r.body.error), message);
  t.is((await acpRecords()).length, before, 'nothing recorded');
}

test.serial('a replayed delivery is refused: each signed event is accepted once', async (t) => {
  const body = orderEvent('cs_replay');
  const t0 = now();
  const header = { 'merchant-signature': `t=${t0},v1=${hmac(secret, t0, body)}` };
  t.is((await deliver(body, header)).status, 200);
  await refused(t, deliver(body, header), 401, /already received/);
});

test.serial('no signature, a malformed one, a stale or future t: 401 before the body is read', async (t) => {
  const body = orderEvent('cs_refused');
  await refused(t, deliver(body, {}), 401, /none was sent/);
  await refused(t, deliver(body, { 'merchant-signature': 'sha256=abc' }), 401, /malformed/);
  await refused(t, deliver(body, { 'merchant-signature': `t=${now()},v1=xyz` }), 401, /malformed/);
  await refused(t, signed(body, now() - 301), 401, /five minutes/);
  await refused(t, signed(body, now() + 400), 401, /five minutes/);
});

test.serial('a signature over a different body, or with another secret: 401', async (t) => {
  const body = orderEvent('cs_forged');
  const t0 = now();
  const other = body.replace('"created"', '"canceled"');
  await refused(
    t,
    deliver(other, { 'merchant-signature': `t=${t0},v1=${hmac(secret, t0, body)}` }),
    401,
    /does not match/,
  );
  await refused(t, signed(body, t0, 'whs_not_the_secret'), 401, /does not match/);
  // The signature of the same body at another t.
  await refused(
    t,
    deliver(body, { 'merchant-signature': `t=${t0 - 1},v1=${hmac(secret, t0, body)}` }),
    401,
    /does not match/,
  );
  // Another workspace's address: no secret of its own verifies.
  const res = await call(server.url, 'POST', '/v1/hooks/acp/ws_0000000000000000000000', {
    headers: { 'content-type': 'application/json', 'merchant-signature': `t=${t0},v1=${hmac(secret, t0, body)}` },
    body,
  });
  t.is(res.status, 401, res.text);
});

test.serial('a signed body that is not an event is refused by field, and nothing is recorded', async (t) => {
  await refused(t, signed('not json'), 400, /./, 'invalid_json');
  await refused(t, signed(JSON.stringify({ type: 'order_delete', data: {} })), 400, /order_create or order_update/);
  await refused(
    t,
    signed(orderEvent('cs_x', 'order_create', { checkout_session_id: undefined })),
    400,
    /checkout_session_id/,
  );
  await refused(t, signed(JSON.stringify({ ...JSON.parse(orderEvent('cs_y')), extra: 1 })), 400, /extra/);
  await refused(
    t,
    signed(orderEvent('cs_z', 'order_create', { permalink_url: 'javascript:alert(1)' })),
    400,
    /permalink_url/,
  );
  // A refused body is not claimed: the same signed bytes again are refused the same way, not as a replay.
  const bad = JSON.stringify({ type: 'order_delete', data: {} });
  const t0 = now();
  const header = { 'merchant-signature': `t=${t0},v1=${hmac(secret, t0, bad)}` };
  t.is((await deliver(bad, header)).status, 400);
  t.is((await deliver(bad, header)).status, 400);
});

test.serial('refusals are counted on the integration', async (t) => {
  const list = await owner.get('/integrations');
  const acp = (list.body.data as Array<{ kind: string; refused: number }>).find((i) => i.kind === 'acp');
  t.truthy(acp, list.text);
  t.true(acp!.refused > 0);
});

test('any signature header or body: 200, 400 or 401, never another answer', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.string({ maxLength: 200 }), fc.string({ maxLength: 200 }), async (header, body) => {
      const res = await deliver(body, { 'merchant-signature': header.replace(/[^\x20-\x7e]/g, '') });
      return [400, 401].includes(res.status);
    }),
    { numRuns: 60 },
  );
  t.pass();
});
