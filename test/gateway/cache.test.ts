import test from 'ava';
import fc from 'fast-check';
import { loadSettings } from '../../src/settings/load.js';
import type { CallRecord } from '../../src/gateway/records.js';
import { expectStatus, otherWorkspace } from '../helpers/console.js';
import { manualClock } from '../helpers/clock.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { CATALOGUE, PROFILES, startGateway, user, type Gateway } from './support.js';

/**
 * The response cache (issue 19 item 7): on per policy profile with a TTL; an exact match
 * on the canonical request within one workspace; never for a dry run or x-svc-cache: bypass; a hit
 * sends nothing, costs nothing against budgets, is recorded as a call of zero cost, and replays a
 * stream as a stream; entries expire by the gateway's clock.
 */
let vendor: MockVendor;
let gw: Gateway;
let admin: string;
const clock = manualClock();

// 100 dollars per million tokens each way: a call costs some hundreds of micro-dollars.
const PRICEY = {
  id: 'pricey',
  provider: 'vendor-o',
  upstreamModel: 'pricey-1',
  priceMicrosPerMTokIn: 100_000_000,
  priceMicrosPerMTokOut: 100_000_000,
  jurisdiction: { domicile: 'US', region: 'us-east' },
};

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(
    vendor,
    {
      models: [...CATALOGUE, PRICEY],
      policyProfiles: [...PROFILES, { id: 'cached', cache: { ttlSeconds: 60 } }],
    },
    {},
    { clock },
  );
  admin = await gw.key({ scope: 'admin' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

const mint = async (input: Record<string, unknown> = {}, owner = gw.owner) =>
  expectStatus(
    await owner.send('POST', '/keys', {
      scope: 'inference',
      defaultTaskClass: 'general',
      policyProfile: 'cached',
      ...input,
    }),
    201,
    'key',
  ).body as { id: string; key: string };

const chat = (
  key: string,
  content: string,
  headers: Record<string, string> = {},
  extra: Record<string, unknown> = {},
) =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: { ...bearer(key), ...headers },
    json: { model: 'pricey', messages: user(content), max_tokens: 5, ...extra },
  });

/** Waits until the cache holds the answer to `text` (entries are written just after the answer). */
async function cached(t: import('ava').ExecutionContext, text: string, streamed = false): Promise<void> {
  // A streamed answer's words are in separate events: its last word is looked for.
  const holds = async () =>
    (await gw.server.app.store.tables.responseCache.scan([])).some((e) =>
      streamed
        ? (e.value.sse ?? '').includes(` ${text.split(' ').at(-1)!}`)
        : JSON.stringify(e.value.json).includes(`echo: ${text}`),
    );
  t.true(await poll(holds, Boolean), `the answer to "${text}" is cached`);
}

async function recordOf(wid: string, callId: string): Promise<CallRecord> {
  await gw.server.app.services.calls.flush();
  return (await gw.server.app.store.tables.calls.get([wid, callId]))!;
}

test.serial('a miss, then a hit for the identical request: nothing sent, zero cost, budgets untouched', async (t) => {
  const { id, key } = await mint();
  const budget = expectStatus(
    await call(gw.server.url, 'POST', '/v1/admin/budgets', {
      headers: bearer(admin),
      json: { scope: { kind: 'key', id }, amountMicros: 1_000_000, period: 'day' },
    }),
    201,
    'budget',
  ).body as { id: string };
  const spent = async () =>
    (
      (await call(gw.server.url, 'GET', '/v1/admin/budgets', { headers: bearer(admin) })).body.data as Array<{
        id: string;
        spentMicros: number;
      }>
    ).find((b) => b.id === budget.id)!.spentMicros;

  const before = vendor.count();
  const miss = await chat(key, 'capital of France');
  t.is(miss.status, 200, miss.text);
  t.is(miss.headers['x-svc-cache'], 'miss');
  t.is(vendor.count(), before + 1);
  const cost = Number(miss.headers['x-svc-cost-micros']);
  t.true(cost > 0);
  await cached(t, 'capital of France');
  const spentAfterMiss = await spent();
  t.is(spentAfterMiss, cost);

  const hit = await chat(key, 'capital of France');
  t.is(hit.status, 200);
  t.is(hit.headers['x-svc-cache'], 'hit');
  t.is(hit.headers['x-svc-cost-micros'], '0');
  t.is(hit.headers['x-svc-routed-to'], miss.headers['x-svc-routed-to']);
  t.deepEqual(hit.body, miss.body, 'the same answer');
  t.is(vendor.count(), before + 1, 'nothing was sent upstream');
  t.is(await spent(), spentAfterMiss, 'a hit costs nothing against budgets');

  const record = await recordOf(gw.owner.wid, String(hit.headers['x-svc-call-id']));
  t.like(record, {
    outcome: 'ok',
    costMicros: 0,
    inputTokens: 0,
    outputTokens: 0,
    cache: 'hit',
    model: miss.headers['x-svc-routed-to'],
  });
  t.like(await recordOf(gw.owner.wid, String(miss.headers['x-svc-call-id'])), { cache: 'miss', costMicros: cost });

  // A different body is a different request.
  const other = await chat(key, 'capital of France', {}, { max_tokens: 6 });
  t.is(other.headers['x-svc-cache'], 'miss');
  t.is(vendor.count(), before + 2);
});

test.serial('another workspace never hits, even with the identical request and profile', async (t) => {
  const { key } = await mint();
  t.is((await chat(key, 'shared question')).headers['x-svc-cache'], 'miss');
  await cached(t, 'shared question');
  t.is((await chat(key, 'shared question')).headers['x-svc-cache'], 'hit');
  const other = await otherWorkspace(gw.server);
  const foreign = await mint({}, other);
  const before = vendor.count();
  const res = await chat(foreign.key, 'shared question');
  t.is(res.status, 200);
  t.is(res.headers['x-svc-cache'], 'miss');
  t.is(vendor.count(), before + 1);
});

test.serial('a dry run and x-svc-cache: bypass skip the cache; any other x-svc-cache is 400', async (t) => {
  const { key } = await mint();
  await chat(key, 'skip me');
  await cached(t, 'skip me');
  const before = vendor.count();
  const dry = await chat(key, 'skip me', { 'x-svc-dry-run': 'true' });
  t.is(dry.status, 200);
  t.is(dry.body.object, 'svc.dry_run');
  t.is(dry.headers['x-svc-cache'], undefined);
  const bypass = await chat(key, 'skip me', { 'x-svc-cache': 'bypass' });
  t.is(bypass.status, 200);
  t.is(bypass.headers['x-svc-cache'], undefined);
  t.is(vendor.count(), before + 1, 'bypass was sent upstream');
  const bad = await chat(key, 'skip me', { 'x-svc-cache': 'hit' });
  assertError(t, bad, 400, 'invalid_request');
  t.is(bad.body.error.errors[0].field, 'x-svc-cache');
  t.is(vendor.count(), before + 1);
});

test.serial('a key without a caching profile is never cached', async (t) => {
  const { key } = await mint({ policyProfile: undefined });
  const first = await chat(key, 'plain question');
  t.is(first.headers['x-svc-cache'], undefined);
  const before = vendor.count();
  t.is((await chat(key, 'plain question')).headers['x-svc-cache'], undefined);
  t.is(vendor.count(), before + 1);
});

test.serial('a streamed hit is replayed as the same server-sent events', async (t) => {
  const { key } = await mint();
  const ask = () =>
    gw
      .openai(key)
      .chat.completions.create({ model: 'pricey', messages: user('stream this please'), stream: true })
      .withResponse();
  const read = async (r: Awaited<ReturnType<typeof ask>>) => {
    let text = '';
    for await (const chunk of r.data) text += chunk.choices[0]?.delta?.content ?? '';
    return text;
  };
  const first = await ask();
  t.is(first.response.headers.get('x-svc-cache'), 'miss');
  t.is(await read(first), 'echo: stream this please');
  await cached(t, 'stream this please', true);
  const before = vendor.count();
  const hit = await ask();
  t.is(hit.response.headers.get('x-svc-cache'), 'hit');
  t.regex(hit.response.headers.get('content-type') ?? '', /^text\/event-stream/);
  t.is(await read(hit), 'echo: stream this please');
  t.is(vendor.count(), before);
  // A JSON request with the same messages is another request: it does not get the stream.
  const json = await chat(key, 'stream this please');
  t.is(json.headers['x-svc-cache'], 'miss');
});

test.serial('the Anthropic shape is cached apart, and its stream replays through the SDK', async (t) => {
  const { key } = await mint();
  const ask = async () => {
    const stream = gw.anthropic(key).messages.stream({
      model: 'claude-eu',
      max_tokens: 50,
      messages: user('claude stream anthropically'),
    });
    let text = '';
    stream.on('text', (piece) => {
      text += piece;
    });
    await stream.finalMessage();
    const { response } = await stream.withResponse();
    return { text, cache: response.headers.get('x-svc-cache') };
  };
  t.deepEqual(await ask(), { text: 'echo: claude stream anthropically', cache: 'miss' });
  await cached(t, 'claude stream anthropically', true);
  const before = vendor.count();
  t.deepEqual(await ask(), { text: 'echo: claude stream anthropically', cache: 'hit' });
  t.is(vendor.count(), before);
});

test.serial('an entry expires after its TTL by the gateway clock', async (t) => {
  const { key } = await mint();
  await chat(key, 'fleeting');
  await cached(t, 'fleeting');
  clock.advance(59_000);
  t.is((await chat(key, 'fleeting')).headers['x-svc-cache'], 'hit');
  clock.advance(2_000);
  const before = vendor.count();
  const again = await chat(key, 'fleeting');
  t.is(again.headers['x-svc-cache'], 'miss');
  t.is(vendor.count(), before + 1);
});

test.serial("expired entries leave the store with the next entry's write; live ones stay", async (t) => {
  const { key } = await mint();
  const tables = gw.server.app.store.tables;
  const stored = async () => ({
    entries: (await tables.responseCache.scan([])).map((e) => e.value.expiresAtMs),
    expiries: (await tables.responseCacheExpiry.scan([])).map((e) => e.key[0] as number),
  });
  await chat(key, 'pruned first');
  await cached(t, 'pruned first');
  await chat(key, 'pruned second');
  await cached(t, 'pruned second');
  // Nothing has expired: the next write keeps every entry (and its place in the expiry index).
  await chat(key, 'kept third');
  await cached(t, 'kept third');
  const live = await stored();
  t.true(live.entries.length >= 3);
  t.is(live.expiries.length, live.entries.length);

  clock.advance(61_000);
  await chat(key, 'after expiry');
  await cached(t, 'after expiry');
  const now = clock.now();
  const after = await stored();
  t.deepEqual(
    after.entries.filter((at) => at <= now),
    [],
    'no expired entry is left',
  );
  t.deepEqual(
    after.expiries,
    after.entries.slice().sort((a, b) => a - b),
  );
  t.is(after.entries.length, 1, 'only the newest entry is left');
  t.is((await chat(key, 'after expiry')).headers['x-svc-cache'], 'hit');
  t.is((await chat(key, 'kept third')).headers['x-svc-cache'], 'miss');
});

test('property: a policy profile takes cache: { ttlSeconds } with a whole number of seconds', (t) => {
  const ttl = fc.oneof(fc.integer({ min: -10, max: 40 * 86_400 }), fc.double(), fc.constant('soon'), fc.constant(null));
  t.notThrows(() =>
    fc.assert(
      fc.property(ttl, (ttlSeconds) => {
        const ok =
          typeof ttlSeconds === 'number' &&
          Number.isInteger(ttlSeconds) &&
          ttlSeconds >= 1 &&
          ttlSeconds <= 30 * 86_400;
        try {
          const s = loadSettings({
            env: {},
            overrides: {
              'gateway.policyProfiles': [{ id: 'p', cache: { ttlSeconds }, limits: { requestsPerMinute: 3 } }],
            },
          });
          return ok && s.gateway.policyProfiles[0]!.cache!.ttlSeconds === ttlSeconds;
        } catch {
          return !ok;
        }
      }),
      { numRuns: 200 },
    ),
  );
});
