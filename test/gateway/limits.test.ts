import test from 'ava';
import fc from 'fast-check';
import OpenAI from 'openai';
import { rateLimitsSchema } from '../../src/settings/schema.js';
import { loadSettings } from '../../src/settings/load.js';
import { AppError } from '../../src/errors/app-error.js';
import { createLimits, resetIn, type Limits } from '../../src/gateway/limits.js';
import { expectStatus, ownerConsole, type LedgerRecord } from '../helpers/console.js';
import { manualClock } from '../helpers/clock.js';
import { assertError, bearer, call, type Reply } from '../helpers/http.js';
import { serveInProcess } from '../helpers/in-process.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { removeDir, stopAndClean, tempDir } from '../helpers/process.js';
import { until } from '../helpers/receiver.js';
import { withStore } from '../helpers/store.js';
import { gatewayConfig, PROFILES, startGateway, user, VENDOR_ENV, type Gateway } from './support.js';

/**
 * Requests and tokens per minute (issue 19 item 5) on a key, a team, a principal and a
 * policy profile: OpenAI's x-ratelimit-* headers on every answer under a limit; past one, 429
 * rate_limited with retry-after, a ledger record, and nothing sent upstream; the window moves with
 * the (injected) clock; counts hold across a restart on the same data dir.
 */
let vendor: MockVendor;
let gw: Gateway;
let admin: string;
// A minute that has just begun, so no test crosses a window by accident.
const clock = manualClock(Math.floor(Date.now() / 60_000) * 60_000 + 1_000);

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(
    vendor,
    {
      policyProfiles: [...PROFILES, { id: 'metered', limits: { requestsPerMinute: 1 } }],
      limits: [
        { scope: { kind: 'team', id: 'ops' }, requestsPerMinute: 2 },
        { scope: { kind: 'principal', id: 'bob' }, tokensPerMinute: 4 },
      ],
    },
    {},
    { clock },
  );
  admin = await gw.key({ scope: 'admin', team: 'admins', principal: 'root' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

/** Mints a key through POST /v1/admin/keys (the route that sets `limits`). */
const mint = async (input: Record<string, unknown>): Promise<string> =>
  expectStatus(
    await call(gw.server.url, 'POST', '/v1/admin/keys', {
      headers: bearer(admin),
      json: { scope: 'inference', defaultTaskClass: 'general', principal: 'alice', team: 'search', ...input },
    }),
    201,
    'key',
  ).body.key as string;

const chat = (key: string, headers: Record<string, string> = {}) =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: { ...bearer(key), ...headers },
    json: { model: 'small', messages: user('hello'), max_tokens: 3 },
  });

const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gw.server.url}/v1`, maxRetries: 0 });

async function evidenceOf(refused: Reply): Promise<LedgerRecord> {
  const id = refused.body.error?.evidenceRecord as string;
  let found: LedgerRecord | undefined;
  await until(
    `ledger record ${id}`,
    async () => (found = (await gw.owner.ledger()).find((r) => r.id === id)) !== undefined,
    10_000,
  );
  return found!;
}

test.serial(
  'a key: requests per minute, headers on each answer, 429 with retry-after before any upstream call',
  async (t) => {
    const key = await mint({ limits: { requestsPerMinute: 2 } });
    const client = sdk(key);
    const first = await client.chat.completions
      .create({ model: 'small', messages: user('hello'), max_tokens: 3 })
      .withResponse();
    t.is(first.response.headers.get('x-ratelimit-limit-requests'), '2');
    t.is(first.response.headers.get('x-ratelimit-remaining-requests'), '1');
    t.is(first.response.headers.get('x-ratelimit-reset-requests'), '59s');
    t.is(first.response.headers.get('x-ratelimit-limit-tokens'), null, 'no token limit, no token headers');
    const second = await chat(key);
    t.is(second.status, 200);
    t.is(second.headers['x-ratelimit-remaining-requests'], '0');

    const before = vendor.count();
    clock.advance(20_000);
    const refused = await chat(key);
    assertError(t, refused, 429, 'rate_limited');
    t.is(refused.headers['retry-after'], '39');
    t.is(refused.headers['x-ratelimit-limit-requests'], '2');
    t.is(refused.headers['x-ratelimit-remaining-requests'], '0');
    t.is(refused.headers['x-ratelimit-reset-requests'], '39s');
    t.regex(String(refused.headers['x-svc-ratelimit-scope']), /^key:key_/);
    t.like(refused.body.error, { limit: 'requestsPerMinute', limitValue: 2, used: 2 });
    t.truthy(refused.body.error.fix);
    t.is(vendor.count(), before, 'nothing was sent upstream');
    // The SDK sees OpenAI's own error class, with the headers a client backs off by.
    const err = await t.throwsAsync(client.chat.completions.create({ model: 'small', messages: user('hello') }), {
      instanceOf: OpenAI.RateLimitError,
    });
    t.is(err?.headers?.get('retry-after'), '39');

    const record = await evidenceOf(refused);
    t.is(record.kind, 'gateway.call_refused');
    t.like(record.data, { type: 'rate_limited', step: 'limit', limit: 'requestsPerMinute', limitValue: 2, used: 2 });

    clock.advance(40_000);
    const next = await chat(key);
    t.is(next.status, 200, 'the next minute admits again');
    t.is(next.headers['x-ratelimit-remaining-requests'], '1');
    t.is(vendor.count(), before + 1);
  },
);

test.serial('a key: tokens per minute count the estimate, then what the vendor reported', async (t) => {
  // "hello" at max_tokens 3: estimated 1 + 3 = 4 tokens; the mock reports 1 in and 2 out.
  const key = await mint({ limits: { tokensPerMinute: 6 } });
  const first = await chat(key);
  t.is(first.status, 200);
  t.is(first.headers['x-ratelimit-limit-tokens'], '6');
  t.is(first.headers['x-ratelimit-remaining-tokens'], '2', 'the estimate is held while the call runs');
  const second = await chat(key);
  t.is(second.status, 200, 'settled at 3 tokens, the minute has room');
  const before = vendor.count();
  const refused = await chat(key);
  assertError(t, refused, 429, 'rate_limited');
  t.like(refused.body.error, { limit: 'tokensPerMinute', limitValue: 6, used: 6 });
  t.is(refused.headers['x-ratelimit-remaining-tokens'], '0');
  t.is(vendor.count(), before);
});

test.serial("a team's limit binds all its keys together", async (t) => {
  const a = await mint({ team: 'ops' });
  const b = await mint({ team: 'ops' });
  t.is((await chat(a)).status, 200);
  const second = await chat(b);
  t.is(second.status, 200);
  t.is(second.headers['x-ratelimit-remaining-requests'], '0');
  const refused = await chat(a);
  assertError(t, refused, 429, 'rate_limited');
  t.is(refused.headers['x-svc-ratelimit-scope'], 'team:ops');
  t.is((await chat(await mint({ team: 'other' }))).status, 200, 'another team is not bound');
});

test.serial("a principal's tokens per minute", async (t) => {
  const key = await mint({ principal: 'bob' });
  const first = await chat(key);
  t.is(first.status, 200);
  t.is(first.headers['x-ratelimit-limit-tokens'], '4');
  t.is((await chat(await mint({ principal: 'bob' }))).status, 200, 'settled at 3 of 4');
  const refused = await chat(key);
  assertError(t, refused, 429, 'rate_limited');
  t.is(refused.headers['x-svc-ratelimit-scope'], 'principal:bob');
});

test.serial("a policy profile's limit, for every key that has it", async (t) => {
  const a = await mint({ policyProfile: 'metered' });
  const b = await mint({ policyProfile: 'metered' });
  // A dry run is checked and carries the headers, but is not counted.
  const dry = await chat(a, { 'x-svc-dry-run': 'true' });
  t.is(dry.status, 200);
  t.is(dry.body.object, 'svc.dry_run');
  t.is(dry.headers['x-ratelimit-remaining-requests'], '1');
  t.is((await chat(a)).status, 200);
  const refused = await chat(b);
  assertError(t, refused, 429, 'rate_limited');
  t.is(refused.headers['x-svc-ratelimit-scope'], 'profile:metered');
  assertError(t, await chat(a, { 'x-svc-dry-run': 'true' }), 429, 'rate_limited');
});

test.serial('a streamed answer carries the headers too', async (t) => {
  const key = await mint({ limits: { requestsPerMinute: 5, tokensPerMinute: 1000 } });
  const { data: stream, response } = await sdk(key)
    .chat.completions.create({ model: 'small', messages: user('hello'), stream: true })
    .withResponse();
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  t.is(text, 'echo: hello');
  t.is(response.headers.get('x-ratelimit-remaining-requests'), '4');
  t.truthy(response.headers.get('x-ratelimit-remaining-tokens'));
  t.regex(response.headers.get('x-ratelimit-reset-tokens') ?? '', /^\d+s$/);
});

test.serial('POST /v1/responses is limited too, with the same headers', async (t) => {
  const key = await mint({ limits: { requestsPerMinute: 1 } });
  const ask = () =>
    call(gw.server.url, 'POST', '/v1/responses', { headers: bearer(key), json: { model: 'small', input: 'hello' } });
  const first = await ask();
  t.is(first.status, 200, first.text);
  t.is(first.headers['x-ratelimit-remaining-requests'], '0');
  const before = vendor.count();
  assertError(t, await ask(), 429, 'rate_limited');
  t.is(vendor.count(), before);
});

test.serial("400 lists every field at fault in a key's limits", async (t) => {
  const res = await call(gw.server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(admin),
    json: { scope: 'inference', limits: { requestsPerMinute: 0, tokensPerMinute: 'many', perHour: 3 } },
  });
  assertError(t, res, 400, 'invalid_request');
  const fields = (res.body.error.errors as Array<{ field: string }>).map((e) => e.field);
  for (const f of ['limits.requestsPerMinute', 'limits.tokensPerMinute', 'limits.perHour'])
    t.true(fields.includes(f), `${f} in ${fields.join(', ')}`);
});

test('limits hold across a restart on the same data dir', async (t) => {
  const dataDir = await tempDir();
  const at = manualClock(clock.now());
  const start = () =>
    serveInProcess({ dataDir, config: gatewayConfig(vendor), env: VENDOR_ENV, clock: at, logLevel: 'silent' });
  let server = await start();
  try {
    const owner = await ownerConsole(server);
    const key = expectStatus(
      await owner.send('POST', '/keys', {
        scope: 'inference',
        defaultTaskClass: 'general',
        limits: { requestsPerMinute: 2 },
      }),
      201,
      'key',
    ).body.key as string;
    const ask = () =>
      call(server.url, 'POST', '/v1/chat/completions', {
        headers: bearer(key),
        json: { model: 'small', messages: user('hello'), max_tokens: 3 },
      });
    t.is((await ask()).status, 200);
    t.is((await ask()).status, 200);
    await server.stop();
    server = await start();
    const refused = await ask();
    assertError(t, refused, 429, 'rate_limited');
    t.is(refused.headers['x-ratelimit-remaining-requests'], '0');
    at.advance(60_000);
    t.is((await ask()).status, 200, 'and the next minute admits again');
  } finally {
    await server.stop();
    await removeDir(dataDir);
  }
});

test('reset durations are written as OpenAI writes them', (t) => {
  t.is(resetIn(340), '340ms');
  t.is(resetIn(12_000), '12s');
  t.is(resetIn(11_001), '12s');
  t.is(resetIn(60_000), '1m0s');
});

test('property: a limits object is accepted exactly when its values are whole numbers from 1 to 10^9', (t) => {
  const value = fc.oneof(fc.integer({ min: -5, max: 2_000_000_000 }), fc.double(), fc.string(), fc.constant(null));
  t.notThrows(() =>
    fc.assert(
      fc.property(fc.record({ requestsPerMinute: value, tokensPerMinute: value }, { requiredKeys: [] }), (limits) => {
        const ok = Object.values(limits).every(
          (v) => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 1_000_000_000,
        );
        const { error } = rateLimitsSchema.validate(limits, { abortEarly: false, convert: false });
        return ok === (error === undefined) && (ok || error!.details.length >= 1);
      }),
      { numRuns: 300 },
    ),
  );
});

test('property: gateway.limits in settings takes a team or principal scope and the same limits', (t) => {
  const scope = fc.record({
    kind: fc.constantFrom('team', 'principal', 'key', 'galaxy'),
    id: fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), fc.constant('')),
  });
  const limit = fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: undefined });
  t.notThrows(() =>
    fc.assert(
      fc.property(scope, limit, limit, (sc, rpm, tpm) => {
        const entry = {
          scope: sc,
          ...(rpm === undefined ? {} : { requestsPerMinute: rpm }),
          ...(tpm === undefined ? {} : { tokensPerMinute: tpm }),
        };
        const ok = (sc.kind === 'team' || sc.kind === 'principal') && sc.id.length > 0;
        let loaded: ReturnType<typeof loadSettings>;
        try {
          loaded = loadSettings({ env: {}, overrides: { 'gateway.limits': [entry] } });
        } catch {
          return !ok;
        }
        return (
          ok && loaded.gateway.limits[0]!.scope.kind === sc.kind && loaded.gateway.limits[0]!.requestsPerMinute === rpm
        );
      }),
      { numRuns: 100 },
    ),
  );
});

test('processes sharing one store add their counts to it, never overwrite each other', async (t) => {
  const dir = await tempDir();
  try {
    await withStore(dir, async (app) => {
      const at = manualClock(clock.now());
      const make = () => createLimits({ store: app.store, clock: at, log: app.log, settings: { limits: [] } });
      const scopes = [{ kind: 'key' as const, id: 'key_shared', limits: { requestsPerMinute: 3 } }];
      const ask = (l: Limits) => l.check({ wid: 'wsp_x', scopes, nowMs: at.now(), tokens: 10, count: true });
      const [one, two] = [make(), make()];
      // Racing: each count is read, checked and written in one write; the two conflict, never overwrite.
      await Promise.all([ask(one), ask(two)]);
      await Promise.all([one.flush(), two.flush()]);
      const minute = Math.floor(at.now() / 60_000) * 60_000;
      t.like(await app.store.tables.rateWindows.get(['wsp_x', 'key', 'key_shared', minute]), {
        requests: 2,
        tokens: 20,
      });
      // A third process (or a restart) starts from what the store holds.
      const three = make();
      t.is((await ask(three)).headers['x-ratelimit-remaining-requests'], '0');
      const err = await t.throwsAsync(ask(three));
      t.is((err as AppError).type, 'rate_limited');
      await three.flush();
      t.is((await app.store.tables.rateWindows.get(['wsp_x', 'key', 'key_shared', minute]))?.requests, 3);
    });
  } finally {
    await removeDir(dir);
  }
});
