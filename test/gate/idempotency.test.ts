import test from 'ava';
import { assertError } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { authorize, payment, PAY_ACME } from '../helpers/gate.js';
import { ACTION_ID, makeAgent, recordsAbout, recordsBy, type Agent } from './support.js';

/**
 * Idempotency of POST /v1/actions/authorize: the same key and the
 * same request answer the same action, never a second decision; the same key for another
 * request is 409 idempotency_conflict. The key goes in the body or the idempotency-key header.
 */

let server: ServedInProcess;
let fx: Agent;

test.before(async () => {
  server = await serveInProcess();
  fx = await makeAgent(server, [{ ...PAY_ACME, periodLimit: { amount: 1_000_000, period: 'day' } }], 'idem-bot');
});

test.after.always(() => stopAndClean(server));

let n = 0;
const freshKey = (label: string) => `${label}-${process.pid}-${++n}`;

test('same key in the body and same body: the same action, recorded once', async (t) => {
  const body = payment(1250, { idempotencyKey: freshKey('body') });
  const first = await authorize(server, fx.key, body);
  t.is(first.status, 200, first.text);
  t.regex(first.body.id, ACTION_ID);
  const second = await authorize(server, fx.key, body);
  t.is(second.status, 200, second.text);
  t.deepEqual(second.body, first.body, 'the very same action, receipt included');
  t.deepEqual(
    (await recordsAbout(server, fx.wid, fx.cookie, first.body.id)).map((r) => r.kind),
    ['action.allowed'],
  );
});

test('same key in the idempotency-key header and same body: the same action, recorded once', async (t) => {
  const key = freshKey('header');
  const first = await authorize(server, fx.key, payment(1300), { 'idempotency-key': key });
  t.is(first.status, 200, first.text);
  const second = await authorize(server, fx.key, payment(1300), { 'idempotency-key': key });
  t.is(second.status, 200, second.text);
  t.is(second.body.id, first.body.id);
  t.deepEqual(second.body, first.body);
  t.deepEqual(
    (await recordsAbout(server, fx.wid, fx.cookie, first.body.id)).map((r) => r.kind),
    ['action.allowed'],
  );
});

test('a key sent first in the body and then in the header is the same key', async (t) => {
  const key = freshKey('moved');
  const first = await authorize(server, fx.key, payment(1400, { idempotencyKey: key }));
  t.is(first.status, 200, first.text);
  const second = await authorize(server, fx.key, payment(1400), { 'idempotency-key': key });
  t.is(second.body.id, first.body.id, second.text);
  const both = await authorize(server, fx.key, payment(1400, { idempotencyKey: key }), { 'idempotency-key': key });
  t.is(both.body.id, first.body.id, both.text);
  t.is((await recordsAbout(server, fx.wid, fx.cookie, first.body.id)).length, 1);
});

test('a denied request replayed with its key is the same denial, with the same evidence record', async (t) => {
  const body = payment(99_999, { idempotencyKey: freshKey('denied') });
  const first = await authorize(server, fx.key, body);
  t.is(first.body.decision, 'deny', first.text);
  const second = await authorize(server, fx.key, body);
  t.deepEqual(second.body, first.body);
  t.deepEqual(
    (await recordsAbout(server, fx.wid, fx.cookie, first.body.id)).map((r) => r.id),
    [first.body.evidenceRecord],
  );
});

test('same key, different body: 409 idempotency_conflict, and nothing new is decided', async (t) => {
  const solo = await makeAgent(server, [PAY_ACME], 'idem-conflict');
  const key = freshKey('conflict');
  const first = await authorize(server, solo.key, payment(1500, { idempotencyKey: key }));
  t.is(first.status, 200, first.text);
  const variants = [
    payment(1501, { idempotencyKey: key }),
    payment(1500, { idempotencyKey: key, summary: 'Another summary' }),
    payment(1500, { idempotencyKey: key, session: { id: 'run-1' } }),
    { type: 'crm.update', summary: 'Something else', idempotencyKey: key },
  ];
  for (const body of variants) assertError(t, await authorize(server, solo.key, body), 409, 'idempotency_conflict');
  assertError(
    t,
    await authorize(server, solo.key, payment(1501), { 'idempotency-key': key }),
    409,
    'idempotency_conflict',
  );
  const bySolo = await recordsBy(server, solo);
  t.deepEqual(
    bySolo.map((r) => [r.kind, r.subject]),
    [['action.allowed', first.body.id]],
  );
  const replay = await authorize(server, solo.key, payment(1500, { idempotencyKey: key }));
  t.deepEqual(replay.body, first.body, 'the first request still replays');
});

test('a body key and a header key that differ: 400 invalid_request, nothing decided', async (t) => {
  const a = freshKey('a');
  const b = freshKey('b');
  const res = await authorize(server, fx.key, payment(1600, { idempotencyKey: a }), { 'idempotency-key': b });
  assertError(t, res, 400, 'invalid_request');
  t.true(Array.isArray(res.body.error.errors));
  // Neither key was used: both are still free for their own requests.
  const withA = await authorize(server, fx.key, payment(1601, { idempotencyKey: a }));
  const withB = await authorize(server, fx.key, payment(1602), { 'idempotency-key': b });
  t.is(withA.status, 200, withA.text);
  t.is(withB.status, 200, withB.text);
  t.not(withA.body.id, withB.body.id);
});

test('an idempotency key that is empty, too long or not printable: 400 invalid_request', async (t) => {
  for (const idempotencyKey of ['', 'k'.repeat(256), 'key\u0000x', 42]) {
    assertError(t, await authorize(server, fx.key, payment(100, { idempotencyKey })), 400, 'invalid_request');
  }
  assertError(
    t,
    await authorize(server, fx.key, payment(100), { 'idempotency-key': 'k'.repeat(256) }),
    400,
    'invalid_request',
  );
});

test('keys are per agent: another agent with the same key and body gets its own action', async (t) => {
  const other = await makeAgent(server, [PAY_ACME], 'idem-other');
  const body = payment(1700, { idempotencyKey: freshKey('shared') });
  const mine = await authorize(server, fx.key, body);
  const theirs = await authorize(server, other.key, body);
  t.is(mine.status, 200, mine.text);
  t.is(theirs.status, 200, theirs.text);
  t.not(theirs.body.id, mine.body.id);
  t.is(theirs.body.agentId, other.agentId);
});

test('20 concurrent identical requests with one key: one action, one action.allowed record', async (t) => {
  const body = payment(1800, { idempotencyKey: freshKey('race') });
  const answers = await Promise.all(Array.from({ length: 20 }, () => authorize(server, fx.key, body)));
  for (const a of answers) t.is(a.status, 200, a.text);
  const ids = new Set(answers.map((a) => a.body.id));
  t.is(ids.size, 1, 'every racer got the same action');
  const [id] = [...ids];
  for (const a of answers) t.deepEqual(a.body, answers[0]!.body);
  const records = await recordsAbout(server, fx.wid, fx.cookie, id!);
  t.deepEqual(
    records.map((r) => r.kind),
    ['action.allowed'],
  );
});
