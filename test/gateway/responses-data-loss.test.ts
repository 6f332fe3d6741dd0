import test from 'ava';
import fc from 'fast-check';
import { redact } from '../../src/gateway/dlp.js';
import { createStreamScreen } from '../../src/gateway/response-screen.js';
import { SseReader, sseEvent } from '../../src/gateway/sse.js';
import type { CallRecord } from '../../src/gateway/records.js';
import { expectStatus } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { CATALOGUE, PROFILES, startGateway, type Gateway } from './support.js';

/**
 * Data loss on the way back for POST /v1/responses (issue 19 item 8): with the official openai
 * SDK's responses.create and responses.stream, a Responses answer's output_text, and the streamed
 * deltas and the full texts the closing events carry, reach the client redacted, whether the
 * vendor speaks Responses (passed through) or chat (translated), even a value split across
 * chunks; in block mode the answer is a 400 in the OpenAI shape and a stream ends with an `error`
 * event. The call record counts what was found, never a value.
 */
let vendor: MockVendor;
let gw: Gateway;
/** 'small' at an OpenAI-kind vendor, asked in chat and translated back. */
let key: string;
/** 'gpt-r' at a vendor that speaks Responses: passed through. */
let respKey: string;

const CARD = '4111 1111 1111 1111';
const SECRET = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';
const ANSWER = `Your card is ${CARD} and the key is ${SECRET}, keep them safe.`;
const REDACTED = 'Your card is [REDACTED:card] and the key is [REDACTED:secret], keep them safe.';

const splitAt = (text: string, at: number) => [text.slice(0, at), text.slice(at)].filter((p) => p !== '');

const ROUTES = [
  { name: 'translated', upstream: 'small-2026', model: 'small', key: () => key },
  { name: 'passed through', upstream: 'gpt-r-2026', model: 'gpt-r', key: () => respKey },
];

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor, {
    providers: [
      { id: 'vendor-o', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY' },
      { id: 'vendor-a', kind: 'anthropic', baseUrl: vendor.anthropicBase, apiKeyEnv: 'VENDOR_A_KEY' },
      { id: 'vendor-r', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY', responses: true },
    ],
    models: [
      ...CATALOGUE,
      {
        id: 'gpt-r',
        provider: 'vendor-r',
        upstreamModel: 'gpt-r-2026',
        priceMicrosPerMTokIn: 2_000_000,
        priceMicrosPerMTokOut: 8_000_000,
        quality: 2,
        latency: 1,
        jurisdiction: { domicile: 'US', region: 'us-west' },
        taskClasses: ['*'],
      },
    ],
    policyProfiles: [...PROFILES, { id: 'responses-only', providers: ['vendor-r'] }],
  });
  key = await gw.key({ defaultTaskClass: 'general', policyProfile: 'us-only' });
  respKey = await gw.key({ defaultTaskClass: 'general', policyProfile: 'responses-only' });
  expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'redact' }), 200, 'setting');
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

async function record(callId: string): Promise<CallRecord> {
  await gw.server.app.services.calls.flush();
  const found = (await gw.server.app.store.tables.calls.scan([])).find((e) => e.value.id === callId)?.value;
  if (!found) throw new Error(`no call record ${callId}`);
  return found;
}

/** The record of the latest call (a stream's is written when it ends). */
async function latest(): Promise<CallRecord> {
  await gw.server.app.services.calls.flush();
  const all = (await gw.server.app.store.tables.calls.scan([])).map((e) => e.value);
  return all.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)).at(-1)!;
}

test.serial('redact: responses.create reaches the client with the card and the secret replaced', async (t) => {
  for (const r of ROUTES) {
    vendor.fault(r.upstream, { kind: 'reply', pieces: [ANSWER] });
    const { data, response } = await gw
      .openai(r.key())
      .responses.create({ model: r.model, input: 'hello' })
      .withResponse();
    t.is(data.output_text, REDACTED, r.name);
    t.false(JSON.stringify(data).includes('4111'), r.name);
    const rec = await record(response.headers.get('x-svc-call-id')!);
    t.deepEqual(rec.answerFindings, { card: 1, secret: 1 }, r.name);
    t.is(rec.outcome, 'ok');
  }
});

test.serial('redact: responses.stream, the card split across two chunks at several positions', async (t) => {
  const start = ANSWER.indexOf(CARD);
  for (const r of ROUTES)
    for (const at of [start, start + 1, start + 4, start + 5, start + 9, start + CARD.length - 1]) {
      vendor.fault(r.upstream, { kind: 'reply', pieces: splitAt(ANSWER, at) });
      const stream = gw.openai(r.key()).responses.stream({ model: r.model, input: 'hello' });
      let text = '';
      const events: unknown[] = [];
      for await (const event of stream) {
        events.push(event);
        if (event.type === 'response.output_text.delta') text += event.delta;
      }
      const final = await stream.finalResponse();
      const label = `${r.name}, split at ${at}`;
      t.is(text, REDACTED, label);
      t.is(final.output_text, REDACTED, label);
      const done = events.find((e) => (e as { type: string }).type === 'response.output_text.done') as {
        text: string;
      };
      t.is(done.text, REDACTED, label);
      t.false(JSON.stringify(events).includes('4111'), label);
      const rec = await latest();
      t.like(rec, { shape: 'responses', stream: true, outcome: 'ok', answerFindings: { card: 1, secret: 1 } }, label);
    }
});

test.serial('redact: translated from Anthropic, the secret split across chunks', async (t) => {
  const eu = await gw.key({ defaultTaskClass: 'general', policyProfile: 'eu-only' });
  const start = ANSWER.indexOf(SECRET);
  for (const at of [start + 1, start + 20, start + SECRET.length - 1]) {
    vendor.fault('claude-eu-2026', { kind: 'reply', pieces: splitAt(ANSWER, at) });
    const stream = gw.openai(eu).responses.stream({ model: 'claude-eu', input: 'hello' });
    const final = await stream.finalResponse();
    t.is(final.output_text, REDACTED, `split at ${at}`);
  }
});

test.serial('block: refused whole in the OpenAI shape; a stream ends with an error event', async (t) => {
  expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'block' }), 200, 'setting');
  try {
    for (const r of ROUTES) {
      vendor.fault(r.upstream, { kind: 'reply', pieces: [ANSWER] });
      const res = await call(gw.server.url, 'POST', '/v1/responses', {
        headers: bearer(r.key()),
        json: { model: r.model, input: 'hello' },
      });
      assertError(t, res, 400, 'sensitive_data_blocked');
      t.regex(res.body.error.message, /The answer holds 1 payment card number and 1 credential/);
      t.false(res.text.includes('4111'), r.name);
      const rec = await record(res.headers['x-svc-call-id'] as string);
      t.like(rec, { outcome: 'sensitive_data_blocked', answerFindings: { card: 1, secret: 1 } }, r.name);

      vendor.fault(r.upstream, { kind: 'reply', pieces: splitAt(ANSWER, ANSWER.indexOf(CARD) + 7) });
      const stream = gw.openai(r.key()).responses.stream({ model: r.model, input: 'hello' });
      const events: unknown[] = [];
      const err = await t.throwsAsync(async () => {
        for await (const event of stream) events.push(event);
      });
      t.regex(err!.message, /The answer holds 1 payment card number/, r.name);
      t.false(JSON.stringify(events).includes('4111'), r.name);
      t.false(
        events.some((e) => (e as { type: string }).type === 'response.completed'),
        `${r.name}: no further events`,
      );
      const streamed = await latest();
      t.like(streamed, { stream: true, outcome: 'sensitive_data_blocked' }, r.name);
    }
  } finally {
    expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'redact' }), 200, 'setting');
  }
});

// The Responses stream screen alone, for any chunking of the deltas and of the bytes.

const VALUES = [CARD, '4111-1111-1111-1111', SECRET, 'jane.doe@example.com', 'AKIAIOSFODNN7EXAMPLE'];
const filler = fc.stringMatching(/^[a-z ,.\n]{0,200}$/);
const cuts = fc.array(fc.nat(), { maxLength: 8 });

const chunked = (text: string, at: number[]): string[] => {
  const points = [...new Set(at.map((n) => n % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const p of points) {
    out.push(text.slice(from, p));
    from = p;
  }
  out.push(text.slice(from));
  return out;
};

/** A Responses vendor's events for one message whose text comes in `pieces`. */
function responsesEvents(pieces: string[]): string {
  const text = pieces.join('');
  const at = { item_id: 'msg_1', output_index: 0, content_index: 0 };
  const item = { id: 'msg_1', type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] };
  const part = { type: 'output_text', text, annotations: [] };
  return [
    sseEvent('response.created', { type: 'response.created', response: { output: [] } }),
    sseEvent('response.content_part.added', {
      type: 'response.content_part.added',
      ...at,
      part: { ...part, text: '' },
    }),
    ...pieces.map((delta) =>
      sseEvent('response.output_text.delta', { type: 'response.output_text.delta', ...at, delta }),
    ),
    sseEvent('response.output_text.done', { type: 'response.output_text.done', ...at, text }),
    sseEvent('response.content_part.done', { type: 'response.content_part.done', ...at, part }),
    sseEvent('response.output_item.done', { type: 'response.output_item.done', output_index: 0, item }),
    sseEvent('response.completed', { type: 'response.completed', response: { output: [item] } }),
  ].join('');
}

test('Responses stream screen: any chunking releases exactly the redacted text, in deltas and carried texts', (t) => {
  fc.assert(
    fc.property(filler, fc.constantFrom(...VALUES), filler, cuts, cuts, (before, value, after, at, byteCuts) => {
      const text = `${before} ${value} ${after}`;
      const bytes = responsesEvents(chunked(text, at).filter((p) => p !== ''));
      const screen = createStreamScreen('responses', 'redact');
      const pieces = chunked(bytes, byteCuts);
      let out = '';
      pieces.forEach((p, i) => (out += i === pieces.length - 1 ? screen.end(p) : screen.push(p)));
      let deltas = '';
      const carried: string[] = [];
      let doneSeen = false;
      for (const e of new SseReader().push(out)) {
        const json = JSON.parse(e.data);
        if (e.event === 'response.output_text.delta') {
          if (doneSeen) return false;
          deltas += json.delta;
        }
        if (e.event === 'response.output_text.done') {
          doneSeen = true;
          carried.push(json.text);
        }
        if (e.event === 'response.content_part.done') carried.push(json.part.text);
        if (e.event === 'response.output_item.done') carried.push(json.item.content[0].text);
        if (e.event === 'response.completed') carried.push(json.response.output[0].content[0].text);
      }
      const expected = redact(text);
      return (
        deltas === expected && carried.length === 4 && carried.every((c) => c === expected) && !out.includes(value)
      );
    }),
    { numRuns: 200 },
  );
  t.pass();
});

test('Responses stream screen, block: an error event, and no text of the value after it', (t) => {
  const start = ANSWER.indexOf(CARD);
  for (const at of [start, start + 3, start + 10]) {
    const screen = createStreamScreen('responses', 'block');
    const out = screen.end(responsesEvents(splitAt(ANSWER, at)));
    const events = new SseReader().push(out);
    t.is(events.at(-1)?.event, 'error', `split at ${at}`);
    t.is(JSON.parse(events.at(-1)!.data).code, 'sensitive_data_blocked');
    t.false(out.includes('4111'));
    t.false(events.some((e) => e.event === 'response.completed'));
    t.deepEqual(screen.blocked, { card: 1, secret: 1 });
  }
});
