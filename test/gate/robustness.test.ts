import test from 'ava';
import { assertError, call, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { authorize, PAY_ACME } from '../helpers/gate.js';
import { authorizeRaw, decodeReceipt, makeAgent, type Agent } from './support.js';

/**
 * Odd but well-formed JSON on the gate is the client's fault, never the server's: every such
 * request answers 200 or a 4xx of the documented error shape (500 is for server faults only), and a
 * refused request leaves nothing in the ledger.
 */

let server: ServedInProcess;
let fx: Agent;

test.before(async () => {
  server = await serveInProcess();
  fx = await makeAgent(
    server,
    [PAY_ACME, { actions: ['crm.*'] }, { actions: ['transfer'], currencies: ['EUR'], maxAmount: 5000 }],
    'odd-input',
  );
});

test.after.always(() => stopAndClean(server));

function send(raw: string): Promise<Reply> {
  return authorizeRaw(server, fx.key, raw);
}

test('deeply nested metadata: 400 invalid_request naming metadata, not a 500', async (t) => {
  for (const depth of [5_000, 50_000]) {
    const res = await send(
      `{"type":"crm.update","summary":"Update","metadata":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`,
    );
    assertError(t, res, 400, 'invalid_request');
    t.true(
      (res.body.error.errors as Array<{ field: string | null }>).some((e) => e.field?.startsWith('metadata')),
      JSON.stringify(res.body.error.errors),
    );
  }
});

test('metadata nested a few levels deep is kept as sent', async (t) => {
  const metadata = { invoice: { id: 1043, lines: [{ sku: 'A-1', qty: 2 }] }, tags: ['q3', 'acme'], note: 'é😀' };
  const res = await authorize(server, fx.key, { type: 'crm.update', summary: 'Update', metadata });
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body.metadata, metadata);
});

test('a lone surrogate in the summary: 400 invalid_request naming summary, not a 500', async (t) => {
  // "\ud800" is valid JSON text whose string is not well-formed Unicode.
  const res = await send('{"type":"crm.update","summary":"Update \\ud800 record"}');
  assertError(t, res, 400, 'invalid_request');
  t.deepEqual(
    (res.body.error.errors as Array<{ field: string | null }>).map((e) => e.field),
    ['summary'],
  );
});

test('a lone surrogate in metadata with an idempotency key: 400 invalid_request, not a 500', async (t) => {
  const res = await send(
    '{"type":"crm.update","summary":"Update","idempotencyKey":"surrogate-1","metadata":{"s":"\\udc00"}}',
  );
  assertError(t, res, 400, 'invalid_request');
  t.true((res.body.error.errors as Array<{ field: string | null }>).some((e) => e.field?.startsWith('metadata')));
});

test('a payment-carrying action that names no merchant is decided or refused as malformed, never a 500', async (t) => {
  // A rule without merchants covers actions that name none; a receipt names its
  // merchant. Either the request is refused naming payment.merchant, or it is
  // allowed and its receipt is valid.
  const res = await authorize(server, fx.key, {
    type: 'transfer',
    summary: 'Move 100 EUR to savings',
    payment: { amount: 100, currency: 'EUR' },
  });
  t.true(res.status < 500, `${res.status} ${res.text}`);
  if (res.status === 400) {
    assertError(t, res, 400, 'invalid_request');
    t.deepEqual(
      (res.body.error.errors as Array<{ field: string | null }>).map((e) => e.field),
      ['payment.merchant'],
    );
  } else {
    t.is(res.status, 200, res.text);
    t.is(res.body.decision, 'allow');
    const { claims } = decodeReceipt(t, res.body.receipt);
    t.like(claims, { act: res.body.id, typ: 'transfer', amt: 100, cur: 'EUR' });
    const verified = await call(server.url, 'POST', '/v1/verify', { json: { receipt: res.body.receipt } });
    t.is(verified.body.valid, true);
  }
});

test('huge, fractional and exotic numbers as amounts are refused as invalid_request', async (t) => {
  for (const amount of ['1e400', '9007199254740993', '1e-7', '-0', '12345678901234567890123']) {
    const res = await send(
      `{"type":"payment","summary":"Pay","payment":{"amount":${amount},"currency":"EUR","merchant":"acme.example"}}`,
    );
    assertError(t, res, 400, 'invalid_request');
    t.deepEqual(
      [...new Set((res.body.error.errors as Array<{ field: string | null }>).map((e) => e.field))],
      ['payment.amount'],
      amount,
    );
  }
});

test('a body that is JSON but not an object is refused as invalid_request', async (t) => {
  for (const raw of ['[]', '"payment"', '42', 'null', 'true']) {
    const res = await send(raw);
    assertError(t, res, 400, 'invalid_request');
    t.deepEqual(
      (res.body.error.errors as Array<{ field: string | null }>).map((e) => e.field),
      [null],
      raw,
    );
  }
});

// A number too large for a double in metadata (valid JSON, parsed as Infinity) with an idempotency
// key is a 4xx or a decision, never a 500 (500 is for server faults only).
test('metadata holding 1e400 or -1e400 with an idempotency key is not a 500', async (t) => {
  const fx = await makeAgent(server, [PAY_ACME, { actions: ['crm.*'] }], 'infinity-bot');
  for (const body of [
    '{"type":"crm.update","summary":"Update","idempotencyKey":"inf-1","metadata":{"n":1e400}}',
    '{"type":"payment","summary":"Pay","idempotencyKey":"inf-2","payment":{"amount":100,"currency":"EUR","merchant":"acme.example"},"metadata":{"n":-1e400}}',
  ]) {
    const res = await authorizeRaw(server, fx.key, body);
    t.true(res.status < 500, `${res.status} ${res.text}`);
  }
});
