import test from 'ava';
import fc from 'fast-check';
import { Readable } from 'node:stream';
import { EventStreamCodec } from '@smithy/core/event-streams';
import type { Attempt, AttemptResult, Shape } from '../../src/gateway/failover.js';
import { vendorAttempt } from '../../src/gateway/forward.js';
import { vendorOf } from '../../src/gateway/vendors/index.js';
import type { Upstream } from '../../src/lib/upstream.js';
import type { GatewayProvider, ProviderKind } from '../../src/settings/schema.js';

/**
 * The adapted vendors' stream readers (issue 19 item 4) under any chunking of the upstream's
 * bytes: a whole stream gives the client exactly the bytes it gives unchunked, and any bytes at
 * all (garbage, a stream cut anywhere, a byte changed) end in a failed attempt (the next model
 * is tried) or a stream that ends or is cut, never a thrown error (a 5xx) and never a hang.
 * Run through the real attempt path (forward.ts `vendorAttempt`) with the upstream's answer given.
 */
const RUNS = 60;
const TEXT = ['echo:', ' héllo', ' ☃', ' 日本語', ' done'];

const sse = (events: unknown[], crlf = false) =>
  Buffer.from(
    events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}${crlf ? '\r\n\r\n' : '\n\n'}`).join(''),
  );

const codec = new EventStreamCodec(
  (b) => new TextDecoder().decode(b),
  (s) => new TextEncoder().encode(s),
);
const frame = (type: string, payload: unknown) =>
  codec.encode({
    headers: {
      ':message-type': { type: 'string', value: 'event' },
      ':event-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
    },
    body: new TextEncoder().encode(JSON.stringify(payload)),
  });

const STREAMS: Record<'azure-openai' | 'gemini' | 'bedrock', Buffer> = {
  'azure-openai': sse([
    { id: '', object: '', created: 0, model: '', choices: [], prompt_filter_results: [] },
    ...TEXT.map((content, i) => ({
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-4o',
      choices: [{ index: 0, delta: i === 0 ? { role: 'assistant', content } : { content }, finish_reason: null }],
    })),
    {
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-4o',
      choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
    },
    {
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-4o',
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
    },
    '[DONE]',
  ]),
  gemini: sse(
    TEXT.map((text, i) => ({
      candidates: [
        { content: { role: 'model', parts: [{ text }] }, ...(i === TEXT.length - 1 ? { finishReason: 'STOP' } : {}) },
      ],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: i + 1, totalTokenCount: i + 4 },
    })),
    true,
  ),
  bedrock: Buffer.concat([
    frame('messageStart', { role: 'assistant' }),
    ...TEXT.map((text) => frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text } })),
    frame('contentBlockStop', { contentBlockIndex: 0 }),
    frame('messageStop', { stopReason: 'end_turn' }),
    frame('metadata', { usage: { inputTokens: 3, outputTokens: 5, totalTokens: 8 } }),
  ]),
};

function attemptFor(kind: ProviderKind, shape: Shape): Attempt {
  const provider: GatewayProvider = {
    id: kind,
    kind,
    baseUrl: 'http://127.0.0.1:9',
    apiKey: 'k',
    connections: 1,
    apiVersion: '2024-10-21',
    region: 'eu-central-1',
    aws: { accessKeyId: 'AKIAPROPERTY', secretAccessKey: 'secret' },
  };
  return {
    shape,
    body: {
      model: 'm',
      stream: true,
      ...(shape === 'anthropic' ? { max_tokens: 10 } : { stream_options: { include_usage: true } }),
      messages: [{ role: 'user', content: 'hi' }],
    },
    stream: true,
    model: {
      id: 'm',
      provider: kind,
      upstreamModel: 'up',
      deployments: [{ provider: kind, upstreamModel: 'up', weight: 1 }],
      priceMicrosPerMTokIn: 1,
      priceMicrosPerMTokOut: 1,
      quality: 1,
      latency: 1,
      jurisdiction: { domicile: 'US', region: 'us' },
      taskClasses: ['*'],
    },
    provider,
    clientModel: 'm',
    traceparent: '00-00000000000000000000000000000001-0000000000000001-01',
    anthropicVersion: undefined,
    signal: new AbortController().signal,
    nowSeconds: 1_800_000_000,
  };
}

/** The attempt over an upstream that answers 200 with `chunks`; what the client got, and how it ended. */
async function run(kind: ProviderKind, shape: Shape, chunks: Buffer[]) {
  const upstream: Upstream = {
    post: async () => ({
      statusCode: 200,
      headers: {},
      body: Readable.from(chunks) as never,
    }),
    close: async () => {},
  };
  const result: AttemptResult = await vendorAttempt(upstream, attemptFor(kind, shape), 'id1', vendorOf(kind)!);
  if (result.kind !== 'stream') return { kind: result.kind, bytes: '', outcome: null };
  let bytes = '';
  try {
    for await (const c of result.stream) bytes += String(c);
  } catch {
    // A cut stream is an error the client sees: what matters is that it ends.
  }
  const { outcome } = await result.done;
  return { kind: result.kind, bytes, outcome };
}

const split = (bytes: Buffer, cuts: number[]): Buffer[] => {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const c of [...at, bytes.length]) {
    if (c > from) out.push(bytes.subarray(from, c));
    from = c;
  }
  return out;
};

for (const kind of Object.keys(STREAMS) as (keyof typeof STREAMS)[]) {
  for (const shape of ['openai', 'anthropic'] as const) {
    test(`${kind} stream read for ${shape} clients: any chunking gives the same bytes`, async (t) => {
      const whole = await run(kind, shape, [STREAMS[kind]]);
      t.is(whole.outcome, 'ok');
      t.true(whole.bytes.includes('日本語'), whole.bytes);
      await fc.assert(
        fc.asyncProperty(fc.array(fc.nat(), { maxLength: 40 }), async (cuts) => {
          const chunked = await run(kind, shape, split(STREAMS[kind], cuts));
          return chunked.outcome === 'ok' && chunked.bytes === whole.bytes;
        }),
        { numRuns: RUNS },
      );
    });
  }

  test(`${kind} stream read: any bytes fail the attempt or end the stream, never throw`, async (t) => {
    const valid = STREAMS[kind];
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
      fc.nat().map((n) => valid.subarray(0, n % valid.length)),
      fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })).map(([n, x]) => {
        const b = Buffer.from(valid);
        b[n % b.length]! ^= x;
        return b;
      }),
    );
    await fc.assert(
      fc.asyncProperty(
        bytes,
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.constantFrom('openai', 'anthropic'),
        async (b, cuts, shape) => {
          const r = await run(kind, shape as Shape, split(b, cuts));
          return r.kind === 'failed' || r.outcome === 'ok' || r.outcome === 'cut';
        },
      ),
      { numRuns: RUNS },
    );
    t.pass();
  });
}
