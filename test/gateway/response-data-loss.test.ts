import test from 'ava';
import fc from 'fast-check';
import { redact } from '../../src/gateway/dlp.js';
import { createStreamScreen, TextHold } from '../../src/gateway/response-screen.js';
import { SseReader } from '../../src/gateway/sse.js';
import type { CallRecord } from '../../src/gateway/records.js';
import { expectStatus } from '../helpers/console.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { startGateway, user, type Gateway } from './support.js';

/**
 * Data loss on the way back (issue 19 item 8): in redact mode a completion's text, and a stream's
 * deltas, reach the client with each sensitive value replaced, even a value split across chunks
 * at any position; in block mode the answer is refused (400 in the route's shape; a stream ends
 * with the vendor's error event). The call record counts what was found, never a value. The
 * clients are the official SDKs with their retries off.
 */
let vendor: MockVendor;
let gw: Gateway;
let key: string;

const CARD = '4111 1111 1111 1111';
const SECRET = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';
const ANSWER = `Your card is ${CARD} and the key is ${SECRET}, keep them safe.`;
const REDACTED = 'Your card is [REDACTED:card] and the key is [REDACTED:secret], keep them safe.';

/** The answer's text split in two at `at`, and the rest after. */
const splitAt = (text: string, at: number) => [text.slice(0, at), text.slice(at)].filter((p) => p !== '');

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor);
  key = await gw.key({ defaultTaskClass: 'general', policyProfile: 'us-only' });
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

test.serial('redact: a completion reaches the client with the card number and the secret replaced', async (t) => {
  vendor.fault('small-2026', { kind: 'reply', pieces: [ANSWER] });
  const { data, response } = await gw
    .openai(key)
    .chat.completions.create({ model: 'small', messages: user('hello') })
    .withResponse();
  t.is(data.choices[0]!.message.content, REDACTED);
  const rec = await record(response.headers.get('x-svc-call-id')!);
  t.deepEqual(rec.answerFindings, { card: 1, secret: 1 });
  t.is(rec.outcome, 'ok');
  t.false(JSON.stringify(rec).includes('4111'));
});

test.serial('redact: an OpenAI stream, the card split across two chunks at every position', async (t) => {
  const start = ANSWER.indexOf(CARD);
  for (let at = start; at <= start + CARD.length; at++) {
    vendor.fault('small-2026', { kind: 'reply', pieces: splitAt(ANSWER, at) });
    const stream = await gw
      .openai(key)
      .chat.completions.create({ model: 'small', messages: user('hello'), stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    t.is(text, REDACTED, `split at ${at}`);
  }
});

test.serial('redact: an Anthropic stream, the secret split across chunks', async (t) => {
  const start = ANSWER.indexOf(SECRET);
  const eu = await gw.key({ defaultTaskClass: 'general', policyProfile: 'eu-only' });
  for (const at of [start + 1, start + 3, start + 20, start + SECRET.length - 1]) {
    vendor.fault('claude-eu-2026', { kind: 'reply', pieces: splitAt(ANSWER, at) });
    const stream = gw.anthropic(eu).messages.stream({ model: 'small', max_tokens: 100, messages: user('hello') });
    const message = await stream.finalMessage();
    t.is(message.content[0]?.type === 'text' ? message.content[0].text : null, REDACTED, `split at ${at}`);
  }
});

test.serial("block: a completion holding a card is refused in the route's shape, charged and recorded", async (t) => {
  expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'block' }), 200, 'setting');
  try {
    vendor.fault('small-2026', { kind: 'reply', pieces: [ANSWER] });
    const res = await call(gw.server.url, 'POST', '/v1/chat/completions', {
      headers: bearer(key),
      json: { model: 'small', messages: user('hello') },
    });
    assertError(t, res, 400, 'sensitive_data_blocked');
    t.regex(res.body.error.message, /The answer holds 1 payment card number and 1 credential/);
    t.false(res.text.includes('4111'));
    t.is(res.body.error.in, 'answer');
    t.regex(String(res.body.error.evidenceRecord), /.+/, 'the refusal is a ledger record');
    const rec = await record(res.headers['x-svc-call-id'] as string);
    t.like(rec, { outcome: 'sensitive_data_blocked', answerFindings: { card: 1, secret: 1 } });
    t.true(rec.costMicros > 0, 'the vendor answered: the call is charged');

    // Anthropic route: the error in Anthropic's shape.
    vendor.fault('small-2026', { kind: 'reply', pieces: [ANSWER] });
    const msg = await call(gw.server.url, 'POST', '/v1/messages', {
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      json: { model: 'small', max_tokens: 50, messages: user('hello') },
    });
    t.is(msg.status, 400);
    t.is(msg.body.type, 'error');
    t.false(msg.text.includes('4111'));

    // A stream ends with the vendor's error event before the value goes out.
    vendor.fault('small-2026', { kind: 'reply', pieces: splitAt(ANSWER, ANSWER.indexOf(CARD) + 7) });
    const stream = await gw
      .openai(key)
      .chat.completions.create({ model: 'small', messages: user('hello'), stream: true });
    let text = '';
    const err = await t.throwsAsync(async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    });
    t.regex(err!.message, /The answer holds 1 payment card number/);
    t.false(text.includes('4111'));
  } finally {
    expectStatus(await gw.owner.send('PUT', '/gateway', { dataLoss: 'redact' }), 200, 'setting');
  }
});

// The screen alone, for any chunking.

const VALUES = [
  CARD,
  '4111-1111-1111-1111',
  SECRET,
  'jane.doe@example.com',
  'GB82 WEST 1234 5698 7654 32',
  'AKIAIOSFODNN7EXAMPLE',
  '-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----',
];
const filler = fc.stringMatching(/^[a-z ,.\n]{0,300}$/);
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

test('held text: any chunking releases exactly what redacting the whole text gives', (t) => {
  fc.assert(
    fc.property(filler, fc.constantFrom(...VALUES), filler, cuts, (before, value, after, at) => {
      const text = `${before} ${value} ${after}`;
      const hold = new TextHold('redact', {});
      let out = '';
      for (const piece of chunked(text, at)) out += hold.push(piece)!;
      out += hold.flush()!;
      return out === redact(text) && !out.includes(value);
    }),
    { numRuns: 300 },
  );
  t.pass();
});

test('held text: a value split at every position is never released', (t) => {
  for (const value of VALUES) {
    const text = `before ${value} after`;
    for (let at = 0; at <= text.length; at++) {
      const hold = new TextHold('redact', {});
      const out = hold.push(text.slice(0, at))! + hold.push(text.slice(at))! + hold.flush()!;
      t.is(out, redact(text), `${value.slice(0, 12)} split at ${at}`);
    }
  }
});

/** The text deltas of client-shaped SSE bytes. */
function deltas(shape: 'openai' | 'anthropic', bytes: string): { text: string; error: boolean } {
  let text = '';
  let error = false;
  for (const e of new SseReader().push(bytes)) {
    if (e.data === '[DONE]') continue;
    const json = JSON.parse(e.data);
    if (shape === 'openai') {
      if (json.error) error = true;
      for (const c of json.choices ?? []) text += c.delta?.content ?? '';
    } else {
      if (e.event === 'error') error = true;
      if (e.event === 'content_block_delta') text += json.delta.text ?? '';
    }
  }
  return { text, error };
}

function sseOf(shape: 'openai' | 'anthropic', pieces: string[]): string {
  if (shape === 'openai') {
    const head = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm' };
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    return [
      chunk({ role: 'assistant', content: '' }),
      ...pieces.map((p) => chunk({ content: p })),
      chunk({}, 'stop'),
      'data: [DONE]\n\n',
    ].join('');
  }
  const ev = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  return [
    ev('message_start', { message: { id: 'msg_1', content: [] } }),
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ...pieces.map((text) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })),
    ev('content_block_stop', { index: 0 }),
    ev('message_delta', { delta: { stop_reason: 'end_turn' } }),
    ev('message_stop', {}),
  ].join('');
}

for (const shape of ['openai', 'anthropic'] as const) {
  test(`${shape} stream: any chunking of the deltas and of the bytes gives the redacted text`, (t) => {
    fc.assert(
      fc.property(filler, fc.constantFrom(...VALUES), filler, cuts, cuts, (before, value, after, at, byteCuts) => {
        const text = `${before} ${value} ${after}`;
        const screen = createStreamScreen(shape, 'redact');
        let out = '';
        const bytes = chunked(sseOf(shape, chunked(text, at)), byteCuts);
        for (const b of bytes.slice(0, -1)) out += screen.push(b);
        out += screen.end(bytes.at(-1)!);
        const seen = deltas(shape, out);
        return (
          seen.text === redact(text) && !seen.error && Object.values(screen.found()).reduce((a, b) => a + b, 0) === 1
        );
      }),
      { numRuns: 200 },
    );
    t.pass();
  });

  test(`${shape} stream, block: the value never goes out and the stream ends with an error event`, (t) => {
    fc.assert(
      fc.property(filler, fc.constantFrom(...VALUES), cuts, (before, value, at) => {
        const screen = createStreamScreen(shape, 'block');
        const bytes = chunked(sseOf(shape, chunked(`${before} ${value} tail`, at)), at);
        let out = '';
        for (const b of bytes.slice(0, -1)) out += screen.push(b);
        out += screen.end(bytes.at(-1)!);
        const seen = deltas(shape, out);
        return seen.error && !seen.text.includes(value) && screen.blocked !== null;
      }),
      { numRuns: 200 },
    );
    t.pass();
  });

  test(`${shape} stream: arbitrary bytes in any chunking never throw`, (t) => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 400 }),
        cuts,
        fc.constantFrom('redact', 'block') as fc.Arbitrary<'redact' | 'block'>,
        (raw, at, mode) => {
          const screen = createStreamScreen(shape, mode);
          const bytes = chunked(raw, at);
          for (const b of bytes.slice(0, -1)) screen.push(b);
          screen.end(bytes.at(-1)!);
          return true;
        },
      ),
      { numRuns: 300 },
    );
    t.pass();
  });
}

test('held text: a long answer without a space, in small deltas, is screened in linear time', (t) => {
  // A 16 KiB tail was screened again at every delta: 80 KB in 4-character deltas took 25 s.
  const text = `${'a1'.repeat(100_000)} 4111 1111 1111 1111`;
  const hold = new TextHold('redact', {});
  const started = performance.now();
  let out = '';
  for (let i = 0; i < text.length; i += 4) out += hold.push(text.slice(i, i + 4))!;
  out += hold.flush()!;
  const ms = performance.now() - started;
  t.log(`200 KB in 4-character deltas: ${ms.toFixed(0)} ms`);
  t.is(out, redact(text));
  t.true(ms < 3_000, `${ms} ms`);
});
