import test from 'ava';
import { assertError, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { authorize, payment, PAY_ACME } from '../helpers/gate.js';
import { authorizeRaw, getAction, makeAgent, recordsBy, type Agent } from './support.js';

/**
 * POST /v1/actions/authorize refuses a malformed request with 400 invalid_request, listing every
 * bad field in `errors`, and decides nothing for it.
 */

let server: ServedInProcess;
let fx: Agent;

test.before(async () => {
  server = await serveInProcess();
  fx = await makeAgent(server, [PAY_ACME, { actions: ['crm.update'] }], 'validation-bot');
});

test.after.always(() => stopAndClean(server));

/** 400 invalid_request whose errors name exactly these fields, and whose message joins them. */
function assertInvalid(t: import('ava').ExecutionContext, res: Reply, fields: Array<string | null>): void {
  assertError(t, res, 400, 'invalid_request');
  const errors = res.body.error.errors as Array<{ field: string | null; message: string }>;
  t.true(Array.isArray(errors), 'errors is listed');
  t.deepEqual(errors.map((e) => e.field).sort(), [...fields].sort());
  for (const e of errors) t.true(typeof e.message === 'string' && e.message.length > 0);
  t.is(res.body.error.message, errors.map((e) => e.message).join('; '));
}

test('missing type: 400 invalid_request naming type', async (t) => {
  const { type: _type, ...body } = payment(1250);
  assertInvalid(t, await authorize(server, fx.key, body), ['type']);
});

test('missing summary: 400 invalid_request naming summary', async (t) => {
  const { summary: _summary, ...body } = payment(1250);
  assertInvalid(t, await authorize(server, fx.key, body), ['summary']);
});

test('a blank summary is missing too', async (t) => {
  assertInvalid(t, await authorize(server, fx.key, payment(1250, { summary: '   ' })), ['summary']);
});

test('a single-word type that is not built in (pay): 400 invalid_request naming type', async (t) => {
  const res = await authorize(server, fx.key, payment(1250, { type: 'pay' }));
  assertInvalid(t, res, ['type']);
});

for (const amount of [12.5, 0, -1, '1250']) {
  test(`payment.amount ${JSON.stringify(amount)}: 400 invalid_request naming payment.amount`, async (t) => {
    const res = await authorize(
      server,
      fx.key,
      payment(1250, { payment: { amount, currency: 'EUR', merchant: 'acme.example' } }),
    );
    assertInvalid(t, res, ['payment.amount']);
  });
}

for (const currency of ['eur', 'EURO', 'EU', 978]) {
  test(`payment.currency ${JSON.stringify(currency)}: 400 invalid_request naming payment.currency`, async (t) => {
    const res = await authorize(
      server,
      fx.key,
      payment(1250, { payment: { amount: 1250, currency, merchant: 'acme.example' } }),
    );
    assertInvalid(t, res, ['payment.currency']);
  });
}

for (const [label, id] of [
  ['empty', ''],
  ['129 characters', 'x'.repeat(129)],
  ['a control character', 'run\u000742'],
  ['a newline', 'run\n42'],
] as const) {
  test(`session.id ${label}: 400 invalid_request naming session.id`, async (t) => {
    assertInvalid(t, await authorize(server, fx.key, payment(1250, { session: { id } })), ['session.id']);
  });
}

test('session.id of exactly 128 printable characters is accepted and echoed as sessionId', async (t) => {
  const id = `${'a'.repeat(120)} ~!@#$%^`;
  t.is(id.length, 128);
  const res = await authorize(server, fx.key, payment(100, { session: { id } }));
  t.is(res.status, 200, res.text);
  t.is(res.body.sessionId, id);
});

test('an unknown top-level field: 400 invalid_request naming it', async (t) => {
  assertInvalid(t, await authorize(server, fx.key, payment(1250, { amount: 1250 })), ['amount']);
});

test('several bad fields at once are listed together and the message joins them with "; "', async (t) => {
  const res = await authorize(server, fx.key, {
    type: 'pay',
    payment: { amount: 12.5, currency: 'eur', merchant: 'acme.example' },
    session: { id: '' },
    colour: 'red',
  });
  assertInvalid(t, res, ['type', 'summary', 'payment.amount', 'payment.currency', 'session.id', 'colour']);
});

test('a refused request decides nothing: the agent has no record in the ledger', async (t) => {
  const quiet = await makeAgent(server, [PAY_ACME], 'quiet-bot');
  const byQuiet = () => recordsBy(server, quiet);
  assertInvalid(t, await authorize(server, quiet.key, payment(12.5)), ['payment.amount']);
  assertInvalid(t, await authorize(server, quiet.key, payment(100, { type: 'pay' })), ['type']);
  t.deepEqual(await byQuiet(), []);
  t.is((await authorize(server, quiet.key, payment(100))).status, 200);
  t.deepEqual(
    (await byQuiet()).map((r) => r.kind),
    ['action.allowed'],
    'a good request is recorded, so the check can see one',
  );
});

test('a body that is not JSON: 400 invalid_json', async (t) => {
  const res = await authorizeRaw(server, fx.key, '{"type": "payment",');
  assertError(t, res, 400, 'invalid_json');
});

test('a dotted custom type (crm.update) is accepted and decided', async (t) => {
  const res = await authorize(server, fx.key, { type: 'crm.update', summary: 'Update the Acme contact record' });
  t.is(res.status, 200, res.text);
  t.is(res.body.type, 'crm.update');
  t.is(res.body.decision, 'allow');
  t.is(res.body.status, 'allowed');
  t.is(res.body.receipt, null, 'only payments carry a receipt');
});

test('a dotted custom type no rule covers is accepted and denied, not refused as malformed', async (t) => {
  const res = await authorize(server, fx.key, { type: 'crm.delete', summary: 'Delete the Acme contact record' });
  t.is(res.status, 200, res.text);
  t.is(res.body.decision, 'deny');
  t.deepEqual(res.body.signals, ['type_not_allowed']);
});

test('a payment names its merchant', async (t) => {
  const res = await authorize(server, fx.key, {
    type: 'payment',
    summary: 'Pay',
    payment: { amount: 100, currency: 'EUR' },
  });
  assertError(t, res, 400, 'invalid_request');
  t.true((res.body.error.errors as Array<{ field: string }>).some((e) => e.field?.startsWith('payment')));
});

for (const [label, value] of [
  ['empty', ''],
  ['129 characters', 'y'.repeat(129)],
  ['a tab', 'run\t42'],
] as const) {
  test(`x-svc-client-session header ${label}: 400 invalid_request`, async (t) => {
    const res = await authorize(server, fx.key, payment(100), { 'x-svc-client-session': value });
    assertError(t, res, 400, 'invalid_request');
    const errors = res.body.error.errors as Array<{ field: string | null; message: string }>;
    t.is(errors.length, 1);
    t.regex(errors[0]!.message, /x-svc-client-session/);
  });
}

test('a good x-svc-client-session header becomes the action sessionId', async (t) => {
  const res = await authorize(server, fx.key, payment(100), { 'x-svc-client-session': 'run-42' });
  t.is(res.status, 200, res.text);
  t.is(res.body.sessionId, 'run-42');
  const again = await getAction(server, fx.key, res.body.id);
  t.is(again.body.sessionId, 'run-42');
});
