import test from 'ava';
import fc from 'fast-check';
import { SseReader, sseData, sseEvent } from '../../src/gateway/sse.js';

/**
 * The SSE reader (the gateway reads every upstream stream with it): whatever the chunk
 * boundaries, and whichever line endings a vendor uses, the same events come out, each with its
 * exact bytes; a cut stream leaves its unfinished event unread.
 */
const event = fc.record({
  name: fc.option(fc.stringMatching(/^[a-z_]{1,12}$/), { nil: null }),
  data: fc.array(
    fc.string({ unit: 'grapheme-ascii' }).filter((s) => !/[\r\n]/.test(s)),
    { minLength: 1, maxLength: 3 },
  ),
});

const encode = (e: { name: string | null; data: string[] }, eol: string) =>
  `${e.name === null ? '' : `event: ${e.name}${eol}`}${e.data.map((d) => `data: ${d}${eol}`).join('')}${eol}`;

/** Splits a text at the given cut points (positions modulo its length). */
const split = (text: string, cuts: number[]) => {
  const at = [...new Set(cuts.map((c) => (text.length === 0 ? 0 : c % text.length)))].sort((a, b) => a - b);
  const out: string[] = [];
  let last = 0;
  for (const c of at) {
    out.push(text.slice(last, c));
    last = c;
  }
  out.push(text.slice(last));
  return out;
};

test('property: any chunking and either line ending gives the same events, with their exact bytes', (t) => {
  fc.assert(
    fc.property(
      fc.array(event, { minLength: 1, maxLength: 8 }),
      fc.array(fc.nat(), { maxLength: 12 }),
      fc.constantFrom('\n', '\r\n'),
      (events, cuts, eol) => {
        const text = events.map((e) => encode(e, eol)).join('');
        const reader = new SseReader();
        const got = split(text, cuts).flatMap((chunk) => reader.push(chunk));
        if (got.length !== events.length) return false;
        return (
          got.every(
            (g, i) =>
              g.event === events[i]!.name && g.data === events[i]!.data.join('\n') && g.raw === encode(events[i]!, eol),
          ) && reader.rest() === ''
        );
      },
    ),
  );
  t.pass();
});

test('comments and blank keep-alives are skipped; a cut event stays unread', (t) => {
  const reader = new SseReader();
  t.deepEqual(reader.push(': keep-alive\n\n'), []);
  const got = reader.push('data: {"a":1}\n\ndata: [DONE]\n\ndata: {"half"');
  t.deepEqual(
    got.map((e) => e.data),
    ['{"a":1}', '[DONE]'],
  );
  t.is(reader.rest(), 'data: {"half"');
});

test('the writers produce what the reader reads back', (t) => {
  const reader = new SseReader();
  const [a, b] = reader.push(sseData({ x: 1 }) + sseEvent('message_stop', { type: 'message_stop' }));
  t.deepEqual(JSON.parse(a!.data), { x: 1 });
  t.is(b!.event, 'message_stop');
  t.deepEqual(JSON.parse(b!.data), { type: 'message_stop' });
});

test('a 10 MB event read in 64 KB chunks takes linear time', (t) => {
  const text = `data: ${'a'.repeat(10_000_000)}\ndata: end\n\n`;
  const started = performance.now();
  const reader = new SseReader();
  const events = [];
  for (let i = 0; i < text.length; i += 65_536) events.push(...reader.push(text.slice(i, i + 65_536)));
  const ms = performance.now() - started;
  t.log(`${ms.toFixed(0)} ms`);
  t.is(events.length, 1);
  t.is(events[0]!.data.length, 10_000_000 + '\nend'.length);
  t.is(reader.rest(), '');
  // Searched again from its start at each chunk, it took 2.3 s on a quiet machine; now tens of ms,
  // a few hundred on a loaded one.
  t.true(ms < 1_500, `${ms} ms`);
});
