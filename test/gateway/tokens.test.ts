import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import test from 'ava';
import fc from 'fast-check';
import { countTokens as reference } from 'gpt-tokenizer';
import {
  countTokens,
  createTokenCounter,
  DEADLINE_MS,
  INLINE_CHARS,
  loadTokenizer,
  type TokenCounter,
} from '../../src/gateway/tokens.js';
import { countLocally } from '../../src/gateway/count-tokens.js';

/**
 * Token counts (src/gateway/tokens.ts, token-count.ts): within 1% of gpt-tokenizer's on prose,
 * code and JSON (exactly its count, in fact, wherever no run of letters, punctuation or spaces is
 * over 256 characters); in linear time on the runs that made gpt-tokenizer quadratic; and a long
 * prompt counted without holding the event loop (a thread, or slices where there is none), falling
 * back to four characters a token at its deadline.
 */
const reference0 = (text: string) => reference(text, { disallowedSpecial: new Set() });
const fixture = (name: string) => readFileSync(new URL(`../fixtures/tokens/${name}`, import.meta.url), 'utf8');
const CORPUS = { prose: fixture('prose.txt'), code: fixture('code.txt'), json: fixture('data.json') };

/** `n` random lowercase letters: no spaces, so one pre-token, and few merges cached. */
const letters = (n: number) => {
  const bytes = randomBytes(n);
  for (let i = 0; i < n; i++) bytes[i] = 97 + (bytes[i]! % 26);
  return bytes.toString('latin1');
};

const counters: TokenCounter[] = [];
const counter = (options?: Parameters<typeof createTokenCounter>[0]) => {
  const made = createTokenCounter(options);
  counters.push(made);
  return made;
};

test.before(async () => {
  await loadTokenizer();
});

test.after.always(async () => {
  await Promise.all(counters.map((c) => c.close()));
});

/**
 * A loop held by a count would be held its whole time, the deadline or more (2 s); a loaded 2-core
 * machine delays an idle loop by up to a few hundred milliseconds (measured at a load of 12).
 */
const HELD_MS = 1_000;

/** The event loop's longest delay (a 5 ms timer's lateness) while `work` runs. */

async function longestDelay<T>(work: () => Promise<T>): Promise<{ result: T; delayMs: number }> {
  let delayMs = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    delayMs = Math.max(delayMs, now - last - 5);
    last = now;
  }, 5);
  try {
    return { result: await work(), delayMs };
  } finally {
    clearInterval(timer);
  }
}

test('prose, code and JSON count within 1% of gpt-tokenizer, on the spot and on the thread', async (t) => {
  const thread = counter();
  for (const [kind, text] of Object.entries(CORPUS)) {
    const expected = reference0(text);
    const counted = countTokens(text);
    t.log(`${kind}: ${text.length} characters, gpt-tokenizer ${expected}, here ${counted}`);
    t.true(Math.abs(counted - expected) <= expected * 0.01, kind);
    // Long enough for the thread: the same count.
    const long = `${text}\n`.repeat(20);
    t.true(long.length > INLINE_CHARS);
    const onThread = await thread.count(long);
    t.true(Math.abs(onThread - reference0(long)) <= reference0(long) * 0.01, `${kind} on the thread`);
  }
});

test('any text without a run over 256 characters counts exactly as gpt-tokenizer counts it', (t) => {
  const words = Object.values(CORPUS).flatMap((text) => text.split(/(\s+)/));
  const mixed = fc.array(fc.oneof(fc.constantFrom(...words), fc.string({ unit: 'grapheme', maxLength: 12 })), {
    maxLength: 300,
  });
  fc.assert(
    fc.property(mixed, (parts) => {
      const text = parts.join('');
      fc.pre(!/[^\s]{257}|\s{257}/u.test(text));
      return countTokens(text) === reference0(text);
    }),
    { numRuns: 300 },
  );
  t.pass();
});

test('a long run without spaces counts within 1% of gpt-tokenizer', (t) => {
  for (const text of ['a'.repeat(20_000), letters(20_000), '-'.repeat(20_000), ' '.repeat(20_000) + 'x']) {
    const expected = reference0(text);
    const counted = countTokens(text);
    t.true(Math.abs(counted - expected) <= expected * 0.01, `${text.slice(0, 3)}…: ${counted} against ${expected}`);
  }
});

test('counting takes linear time on the runs that were quadratic', (t) => {
  // gpt-tokenizer alone: 'a' x 80,000 took 2.9 s and x 320,000 45 s on the event loop.
  const kinds: Record<string, string> = {
    'a x 320,000': 'a'.repeat(320_000),
    'a x 10,000,000': 'a'.repeat(10_000_000),
    '256 KB of random letters': letters(262_144),
    '256 KB of capitals': 'A'.repeat(262_144),
    '256 KB of punctuation': '!#$%&*+,.:;=?@^|~'.repeat(15_420),
    '256 KB of CJK': '漢字仮名交じり文'.repeat(32_768),
    '256 KB of spaces, then a letter': `${' '.repeat(262_144)}x`,
    '256 KB of space-newline': ' \n'.repeat(131_072),
    '128 K emoji': '😀'.repeat(131_072),
  };
  for (const [kind, text] of Object.entries(kinds)) {
    const started = performance.now();
    const n = countTokens(text);
    const ms = performance.now() - started;
    t.log(`${kind}: ${n} tokens in ${ms.toFixed(0)} ms`);
    // Linear work is under a second for each on a quiet machine; quadratic work would take minutes.
    t.true(ms < 8_000, `${kind}: ${ms} ms`);
  }
});

test.serial(
  'a 10 MB prompt that takes too long is estimated at its deadline, and the event loop is never held',
  async (t) => {
    const thread = counter();
    const text = letters(10_000_000);
    const started = performance.now();
    const { result, delayMs } = await longestDelay(() => thread.count(text));
    const ms = performance.now() - started;
    t.log(`on the thread: ${result} in ${ms.toFixed(0)} ms; the event loop's longest delay ${delayMs.toFixed(1)} ms`);
    // Random letters cost 1 to 4 µs a character: the count does not finish by its deadline.
    t.is(result, 2_500_000, 'four characters a token');
    t.true(ms < DEADLINE_MS + 1_500, `answered at its deadline, not after the count (${ms} ms)`);
    t.true(delayMs < HELD_MS, `the loop was held ${delayMs} ms`);
  },
);

test.serial(
  'without a thread (the single executable), a long prompt is counted in slices between other work',
  async (t) => {
    const slices = counter({ thread: false });
    const prose = `${CORPUS.prose}\n`.repeat(100);
    const counted = await longestDelay(() => slices.count(prose));
    t.is(counted.result, reference0(prose));
    const text = letters(10_000_000);
    const started = performance.now();
    const { result, delayMs } = await longestDelay(() => slices.count(text));
    const ms = performance.now() - started;
    t.log(`in slices: ${result} in ${ms.toFixed(0)} ms; the event loop's longest delay ${delayMs.toFixed(1)} ms`);
    t.is(result, 2_500_000);
    t.true(ms < DEADLINE_MS + 1_500, `${ms} ms`);
    t.true(delayMs < HELD_MS, `the loop was held ${delayMs} ms`);
  },
);

test('a closed counter ends its thread; a count still coming is answered without starting another', async (t) => {
  const thread = counter();
  const text = `${CORPUS.code}\n`.repeat(10);
  t.is(await thread.count(text), reference0(text));
  await thread.close();
  t.is(await thread.count(text), reference0(text));
});

test.serial('past eight long texts waiting for the thread, the next ones are estimated at once', async (t) => {
  const thread = counter();
  await thread.count(`${CORPUS.prose}\n`.repeat(5));
  // 100,000 random letters: 0.1 to 0.4 s of the thread each, about 52,000 tokens; estimated, 25,000.
  const texts = Array.from({ length: 12 }, () => letters(100_000));
  const started = performance.now();
  const answers = await Promise.all(
    texts.map(async (text) => ({ tokens: await thread.count(text), ms: performance.now() - started })),
  );
  const atOnce = answers.filter((a) => a.tokens === 25_000 && a.ms < DEADLINE_MS / 2);
  t.log(answers.map((a) => `${a.tokens} in ${a.ms.toFixed(0)} ms`).join('; '));
  t.true(atOnce.length >= 4, 'the four past the bound, estimated without waiting');
  t.true(
    answers.some((a) => a.tokens > 40_000),
    'the first ones counted',
  );
});

test.serial('many short texts of one body are counted as one long text, never each on the event loop', async (t) => {
  const thread = counter();
  // 2,000 blocks of 2,000 random letters: each short enough to count on the spot, together 4 MB
  // (about 8 s of the loop when each was counted there).
  const blocks = Array.from({ length: 2_000 }, () => ({ type: 'text', text: letters(2_000) }));
  const body = { model: 'small', messages: [{ role: 'user', content: blocks }] };
  const started = performance.now();
  const { result, delayMs } = await longestDelay(() => countLocally(body, thread));
  const ms = performance.now() - started;
  t.log(`${result} tokens in ${ms.toFixed(0)} ms; the event loop's longest delay ${delayMs.toFixed(1)} ms`);
  t.true(result >= 4_000_000 / 4, 'at least four characters a token');
  t.true(delayMs < HELD_MS, `the loop was held ${delayMs} ms`);
  // A short body is still counted exactly, text by text.
  const small = { model: 'small', system: 'Be brief.', messages: [{ role: 'user', content: 'Hello there' }] };
  t.is(await countLocally(small, thread), 3 + reference0('Be brief.') + reference0('Hello there'));
});
