import test from 'ava';
import fc from 'fast-check';
import { bearer, call, type Json, type Reply } from '../helpers/http.js';
import { startServer, stopAndClean, type RunningServer } from '../helpers/process.js';
import { authorize, payment, PAY_ACME } from '../helpers/gate.js';
import { makeAgent, type Agent } from '../gate/support.js';

/**
 * Arbitrary input to the gate and to receipt verification, through a real `svc serve`: never a
 * 5xx (500 is a server fault), and every answer that is not a 200 has the documented error
 * shape (type, message, fix, docs, requestId = x-request-id; `errors` on validation types).
 * The rate limits are raised so that only the input decides the answer.
 */

let server: RunningServer;
let fx: Agent;
let other: Agent;
/** Actions in every state, to settle and read: allowed, denied, pending, settled, another agent's. */
const actionIds: string[] = [];
let receipt: string;

const RUNS = 150;
const VALIDATION_TYPES = new Set([
  'invalid_request',
  'invalid_mandate',
  'invalid_budget',
  'invalid_application',
  'invalid_upstream',
]);
const VERIFY_REASONS = new Set(['malformed', 'bad_signature', 'unknown_key', 'expired', 'revoked']);

test.before(async () => {
  server = await startServer({ env: { SVC_GATE_RATE_PER_MINUTE: '100000', SVC_PUBLIC_RATE_PER_MINUTE: '100000' } });
  const rules = [
    { ...PAY_ACME, periodLimit: { amount: 1_000_000_000, period: 'day' } },
    { actions: ['payment'], merchants: ['big.example'], currencies: ['EUR', 'USD'], approval: { above: 10 } },
    { actions: ['crm.*', 'email', 'browse'], domains: ['*'] },
    { actions: ['refund', 'transfer', 'purchase'], merchants: ['*'], currencies: ['EUR'] },
  ];
  [fx, other] = await Promise.all([makeAgent(server, rules, 'fuzzed'), makeAgent(server, [PAY_ACME], 'bystander')]);
  const made = await Promise.all([
    authorize(server, fx.key, payment(100)),
    authorize(server, fx.key, payment(200)),
    authorize(server, fx.key, payment(300)),
    authorize(server, fx.key, payment(99_999)),
    authorize(server, fx.key, payment(500, { payment: { amount: 500, currency: 'EUR', merchant: 'big.example' } })),
    authorize(server, other.key, payment(100)),
  ]);
  for (const r of made) if (r.status !== 200) throw new Error(`fixture: ${r.status} ${r.text}`);
  actionIds.push(...made.map((r) => r.body.id as string));
  const settled = await call(server.url, 'POST', `/v1/actions/${actionIds[2]}/settle`, {
    headers: bearer(fx.key),
    json: { status: 'completed' },
  });
  if (settled.status !== 200) throw new Error(`fixture settle: ${settled.status} ${settled.text}`);
  receipt = made[0]!.body.receipt as string;
});

test.after.always(() => stopAndClean(server));

/** Throws (so fast-check reports the input) unless the answer is a 200 or a well-formed 4xx. */
function wellFormed(res: Reply, label: string): void {
  const fail = (why: string) => {
    throw new Error(`${label}: ${why}: ${res.status} ${res.text.slice(0, 500)}`);
  };
  if (res.status >= 500) fail('server error');
  if (typeof res.headers['x-request-id'] !== 'string') fail('no x-request-id');
  if (res.status === 200) return;
  if (res.status < 400) fail('unexpected status');
  const e = res.body?.error;
  if (typeof e?.type !== 'string' || typeof e.message !== 'string') fail('not the SPEC 7.1 shape');
  if (typeof e.fix !== 'string' || e.fix.length === 0) fail('no fix');
  if (typeof e.docs !== 'string' || !e.docs.endsWith(`/docs/errors#${e.type}`)) fail('no docs anchor');
  if (e.requestId !== res.headers['x-request-id']) fail('requestId differs from x-request-id');
  if (VALIDATION_TYPES.has(e.type)) {
    if (!Array.isArray(e.errors) || e.errors.length === 0) fail('validation error without errors');
    for (const item of e.errors) {
      if (!(item.field === null || typeof item.field === 'string') || typeof item.message !== 'string')
        fail('malformed errors item');
    }
    if (e.type === 'invalid_request' && e.message !== e.errors.map((x: { message: string }) => x.message).join('; '))
      fail('message does not join errors');
  }
}

// Arbitraries

/** Any code point, lone surrogates included (valid in JSON text as \uXXXX escapes). */
const anyChar = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 0x10ffff }).map((cp) => String.fromCodePoint(cp)) },
  { weight: 2, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((u) => String.fromCharCode(u)) },
);
const oddString = fc.oneof(
  fc.string({ unit: anyChar, maxLength: 40 }),
  fc.constantFrom('', ' ', 'payment', 'crm.update', 'EUR', 'eur', 'acme.example', '\u0000', '😀', 'x'.repeat(300)),
);
const oddNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, -1, 1, 1.5, 2 ** 53, 2 ** 53 + 2, 1e21, 1e308, -1e308, Number.MAX_SAFE_INTEGER),
);
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  oddString,
  oddNumber,
  fc.constantFrom(null, true, false, [], {}),
  fc.jsonValue({ maxDepth: 3, stringUnit: anyChar }),
);

const FIELDS = [
  'type',
  'summary',
  'payment',
  'payment.amount',
  'payment.currency',
  'payment.merchant',
  'target',
  'target.domain',
  'session',
  'session.id',
  'idempotencyKey',
  'metadata',
  'metadata.note',
  'extra',
] as const;

function mutate(base: Record<string, Json>, path: string, value: unknown): Record<string, Json> {
  const copy = structuredClone(base);
  const [head, tail] = path.split('.') as [string, string | undefined];
  if (tail === undefined) {
    if (value === undefined) delete copy[head];
    else copy[head] = value;
  } else {
    if (typeof copy[head] !== 'object' || copy[head] === null || Array.isArray(copy[head])) copy[head] = {};
    if (value === undefined) delete copy[head][tail];
    else copy[head][tail] = value;
  }
  return copy;
}

const validBodies = fc.constantFrom<Record<string, Json>>(
  payment(1250, { session: { id: 'run-1' }, metadata: { note: 'n' } }),
  { type: 'crm.update', summary: 'Update the Acme record', target: { domain: 'api.example.com' } },
  { type: 'transfer', summary: 'Move money', payment: { amount: 10, currency: 'EUR', merchant: 'bank.example' } },
  { type: 'email', summary: 'Mail the customer', idempotencyKey: 'k-1' },
);
const mutatedBody = fc
  .tuple(
    validBodies,
    fc.array(fc.tuple(fc.constantFrom(...FIELDS), fc.option(oddValue, { nil: undefined })), {
      minLength: 1,
      maxLength: 3,
    }),
  )
  .map(([base, changes]) => changes.reduce((b, [path, value]) => mutate(b, path, value), base));

test('POST /v1/actions/authorize: arbitrary JSON bodies never give a 5xx, and refusals have the documented error shape', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.jsonValue({ maxDepth: 4 }), fc.object({ maxDepth: 3 }), fc.anything({ maxDepth: 3 })),
        async (body) => {
          const res = await authorize(server, fx.key, body);
          wellFormed(res, 'authorize');
          if (
            res.status === 200 &&
            (res.body.object !== 'action' || !['allow', 'deny', 'review'].includes(res.body.decision))
          )
            throw new Error(`not a decision: ${res.text}`);
        },
      ),
      { numRuns: RUNS, verbose: 1 },
    ),
  );
});

test('POST /v1/actions/authorize: valid bodies with odd values (unicode, odd types, huge numbers) never give a 5xx', async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(
        mutatedBody,
        fc.option(fc.string({ unit: 'grapheme-ascii', maxLength: 300 }), { nil: undefined }),
        async (body, idem) => {
          const res = await authorize(server, fx.key, body, idem === undefined ? {} : { 'idempotency-key': idem });
          wellFormed(res, 'authorize');
        },
      ),
      { numRuns: 2 * RUNS, verbose: 1 },
    ),
  );
});

test('POST /v1/actions/authorize: numeric literals JSON.stringify cannot write, as amounts, never give a 5xx', async (t) => {
  const literal = fc
    .tuple(
      fc.boolean(),
      fc.stringMatching(/^[1-9][0-9]{0,40}$/),
      fc.option(fc.stringMatching(/^[0-9]{1,20}$/), { nil: undefined }),
      fc.option(fc.integer({ min: -400, max: 400 }), { nil: undefined }),
    )
    .map(
      ([neg, int, frac, exp]) =>
        `${neg ? '-' : ''}${int}${frac === undefined ? '' : `.${frac}`}${exp === undefined ? '' : `e${exp}`}`,
    );
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(literal, async (amount) => {
        const res = await call(server.url, 'POST', '/v1/actions/authorize', {
          headers: { ...bearer(fx.key), 'content-type': 'application/json' },
          body: `{"type":"payment","summary":"Pay","payment":{"amount":${amount},"currency":"EUR","merchant":"acme.example"}}`,
        });
        wellFormed(res, `amount ${amount}`);
        if (res.status === 200 && !Number.isSafeInteger(res.body.payment.amount))
          throw new Error(`accepted ${amount} as ${res.body.payment.amount}`);
      }),
      { numRuns: RUNS, verbose: 1 },
    ),
  );
});

test('POST /v1/actions/authorize: deeply nested bodies never give a 5xx', async (t) => {
  // The counterexample is reported as [depth, field, arrays], not as the (long) body.
  const nested = fc.tuple(
    fc.integer({ min: 1, max: 30_000 }),
    fc.constantFrom('metadata', 'payment', 'target', 'session', 'extra'),
    fc.boolean(),
  );
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(nested, async ([depth, field, arrays]) => {
        const open = arrays ? '[' : '{"a":';
        const close = arrays ? ']' : '}';
        const raw = `{"type":"crm.update","summary":"Nested","${field}":{"x":${open.repeat(depth)}1${close.repeat(depth)}}}`;
        const res = await call(server.url, 'POST', '/v1/actions/authorize', {
          headers: { ...bearer(fx.key), 'content-type': 'application/json' },
          body: raw,
        });
        wellFormed(res, `${field} nested ${depth} deep`);
      }),
      { numRuns: 40, verbose: 1 },
    ),
  );
});

test('POST /v1/actions/{id}/settle and GET /v1/actions/{id}: arbitrary ids and bodies never give a 5xx', async (t) => {
  // A path segment: a real action id, any text (percent-encoded), or raw odd escapes
  // (invalid UTF-8, a NUL, a stray %).
  const segment = fc.oneof(
    fc.constantFrom(...actionIds),
    fc.string({ unit: 'binary', maxLength: 80 }).map((s) => encodeURIComponent(s)),
    fc.stringMatching(/^act_[0-9A-Za-z]{0,30}$/),
    fc.constantFrom('%ED%A0%80', '%C0%AF', '%00', '%', '%zz', '..', '%2F', `${'a'.repeat(64)}`, `${'a'.repeat(65)}`),
  );
  const body = fc.oneof(
    fc.jsonValue({ maxDepth: 3, stringUnit: anyChar }),
    fc.record(
      { status: fc.oneof(fc.constantFrom('completed', 'failed', 'cancelled'), oddValue), amount: oddValue },
      { requiredKeys: [] },
    ),
    fc.record(
      { status: fc.constantFrom('completed', 'failed', 'cancelled'), amount: fc.nat(10_000) },
      { requiredKeys: ['status'] },
    ),
  );
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(segment, body, async (actionId, payload) => {
        const path = `/v1/actions/${actionId}`;
        const settled = await call(server.url, 'POST', `${path}/settle`, { headers: bearer(fx.key), json: payload });
        wellFormed(settled, `settle ${JSON.stringify(actionId)}`);
        if (settled.status === 200 && (settled.body.status !== 'settled' || settled.body.agentId !== fx.agentId))
          throw new Error(`settled wrongly: ${settled.text}`);
        const read = await call(server.url, 'GET', path, { headers: bearer(fx.key) });
        wellFormed(read, `get ${JSON.stringify(actionId)}`);
        if (read.status === 200 && read.body.agentId !== fx.agentId)
          throw new Error(`read another agent's action: ${read.text}`);
      }),
      { numRuns: RUNS, verbose: 1 },
    ),
  );
});

test('POST /v1/verify: arbitrary strings as receipt never give a 5xx; a 200 says valid or names a reason', async (t) => {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const parts = receipt.split('.') as [string, string, string];
  const forged = fc
    .tuple(fc.jsonValue({ maxDepth: 2 }), fc.jsonValue({ maxDepth: 2 }), fc.string({ unit: anyChar, maxLength: 90 }))
    .map(([h, c, s]) => `${b64(h)}.${b64(c)}.${Buffer.from(s).toString('base64url')}`);
  const tampered = fc
    .tuple(fc.nat(receipt.length - 1), anyChar)
    .map(([i, ch]) => receipt.slice(0, i) + ch + receipt.slice(i + 1));
  const spliced = fc
    .tuple(fc.constantFrom(0, 1, 2), fc.string({ unit: anyChar, maxLength: 60 }))
    .map(([i, s]) => parts.map((p, j) => (j === i ? s : p)).join('.'));
  const claims = fc
    .record({
      alg: fc.constantFrom('EdDSA', 'none', 'HS256', 'RS256'),
      kid: fc.oneof(fc.string(), fc.constant(JSON.parse(Buffer.from(parts[0], 'base64url').toString()).kid)),
    })
    .map((h) => `${b64(h)}.${parts[1]}.${parts[2]}`);
  const text = fc.oneof(
    fc.string({ unit: anyChar, maxLength: 300 }),
    forged,
    tampered,
    spliced,
    claims,
    fc.constantFrom('a'.repeat(20_000), '..', '...', receipt, `${receipt}.`, ` ${receipt}`),
  );
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(
        fc.oneof(
          { weight: 5, arbitrary: text.map((r) => ({ receipt: r })) },
          { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
        ),
        async (body) => {
          const res = await call(server.url, 'POST', '/v1/verify', { json: body });
          wellFormed(res, 'verify');
          if (res.status === 200) {
            if (typeof res.body.valid !== 'boolean') throw new Error(`no validity: ${res.text}`);
            if (!res.body.valid && !VERIFY_REASONS.has(res.body.reason))
              throw new Error(`invalid without a known reason: ${res.text}`);
          }
        },
      ),
      { numRuns: RUNS, verbose: 1 },
    ),
  );
});
