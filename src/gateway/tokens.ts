import { isSea } from 'node:sea';
import { Worker } from 'node:worker_threads';
import { tokenizerOf, type Tokenizer } from './token-count.js';
import type { CountJob, WorkerMessage } from './tokenizer-worker.js';

/**
 * Token counts of prompt text, with a real tokenizer (gpt-tokenizer, o200k_base: the encoding of
 * OpenAI's current models; for other vendors' models an estimate close to theirs, far closer than
 * four characters a token). Used for POST /v1/messages/count_tokens when no Anthropic-kind vendor
 * is asked, and for the estimates of budgets and per-minute token limits.
 * Rules:
 * - Counting takes linear time (token-count.ts), and no request holds the event loop with it:
 *   a text of up to INLINE_CHARS characters is counted on the spot (the slowest kind of text, a
 *   run of random letters, takes 1 to 4 µs a character: under 10 ms; prose takes tens of
 *   microseconds, less than a round trip to a thread); a longer one is counted by the gateway's
 *   tokenizer thread
 *   (tokenizer-worker.ts), until DEADLINE_MS after it was asked. Past the deadline the text counts
 *   at four characters a token (`estimate`). Where no thread can be started (the single
 *   executable has no worker file) a long text is counted on the event loop a slice of about a
 *   millisecond at a time, other work running between slices, with the same deadline.
 * - The tokenizer's tables take a second or more to load, so they are loaded once, off the
 *   request path: the gateway starts loading them when it is created, and a model request that
 *   arrives before they are ready waits for them once (service.ts).
 * - Until the tables are loaded (only a caller that did not wait), text counts at four characters
 *   a token.
 * - Special-token text in a prompt (`<|endoftext|>`) is counted as ordinary text, never refused.
 */
let tokenizer: Tokenizer | null = null;
let loading: Promise<Error | null> | null = null;

/** Longer texts are counted off the event loop. */
export const INLINE_CHARS = 2_048;
/** How long a long text may take to count (its wait for the thread included). */
export const DEADLINE_MS = 2_000;
/** An event-loop slice of a long text counted without a thread. */
const SLICE_MS = 1;

/** The documented fallback: four characters a token. */
export const estimate = (text: string): number => Math.ceil(text.length / 4);

/**
 * Starts loading the tokenizer (once); resolves when it is ready, or with the error that kept it
 * from loading (then text keeps counting at four characters a token).
 */
export function loadTokenizer(): Promise<Error | null> {
  loading ??= import('gpt-tokenizer').then(
    (m) => {
      tokenizer = tokenizerOf(m);
      return null;
    },
    (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
  );
  return loading;
}

export const tokenizerReady = (): boolean => tokenizer !== null;

/** Tokens in `text`, counted on the spot (four characters a token until the tokenizer is loaded). */
export function countTokens(text: string): number {
  if (text === '') return 0;
  return tokenizer ? tokenizer.count(text) : estimate(text);
}

/** Counts texts without holding the event loop; made with the gateway, stopped with it. */
export interface TokenCounter {
  /** Tokens in `text`: counted, or estimated past the deadline. */
  count(text: string): Promise<number>;
  /** Starts the thread ahead of the first long text. */
  warm(): void;
  /** Ends the thread; a count under way is estimated. */
  close(): Promise<void>;
}

type Pending = (tokens: number | null) => void;

/** The tokenizer thread: one, started at the first long text (or warm()), and again if it dies. */
function createThread(onFailure: (reason: string, unloadable: boolean) => void) {
  let worker: Worker | null = null;
  let seq = 0;
  const pending = new Map<number, Pending>();
  const settleAll = () => {
    for (const done of pending.values()) done(null);
    pending.clear();
  };
  const start = (): Worker => {
    const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
    const w = new Worker(new URL(`./tokenizer-worker${ext}`, import.meta.url), { name: 'svc tokenizer' });
    // Never what keeps the process alive: a server that stops ends it too (close()).
    w.unref();
    w.on('message', (m: WorkerMessage) => {
      if ('id' in m) {
        pending.get(m.id)?.(m.tokens);
        pending.delete(m.id);
      } else if (!m.ready) onFailure(`the tokenizer thread could not load gpt-tokenizer: ${m.error}`, true);
    });
    // Gone (it failed, or could not load): what it was counting is estimated; the next long text
    // starts another.
    w.on('error', (err) => onFailure(`the tokenizer thread failed: ${err.message}`, false));
    w.on('exit', () => {
      if (worker !== w) return;
      worker = null;
      settleAll();
    });
    return w;
  };
  return {
    warm() {
      worker ??= start();
    },
    count(text: string, deadline: number): Promise<number | null> {
      worker ??= start();
      const id = ++seq;
      const w = worker;
      return new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => done(null), Math.max(0, deadline - Date.now()) + 10);
        const done: Pending = (tokens) => {
          clearTimeout(timer);
          pending.delete(id);
          resolve(tokens);
        };
        pending.set(id, done);
        w.postMessage({ id, text, deadline } satisfies CountJob);
      });
    },
    async close() {
      const w = worker;
      worker = null;
      settleAll();
      if (w) await w.terminate();
    },
  };
}

/** A long text counted on the event loop, a slice at a time (where no thread can be started). */
async function countInSlices(t: Tokenizer, text: string, deadline: number): Promise<number | null> {
  const counting = t.start(text);
  for (;;) {
    const n = counting.run(Math.min(deadline, Date.now() + SLICE_MS));
    if (n !== null || Date.now() > deadline) return n;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * The gateway's counter. `onFailure` hears why the thread failed; a thread that could not load
 * the tokenizer is not started again, and long texts are then counted in slices.
 */
export function createTokenCounter(options: { onFailure?: (reason: string) => void } = {}): TokenCounter {
  let useThread = !isSea();
  const thread = createThread((reason, unloadable) => {
    if (unloadable) useThread = false;
    options.onFailure?.(reason);
  });
  return {
    async count(text) {
      if (text.length <= INLINE_CHARS || !tokenizer) return countTokens(text);
      const deadline = Date.now() + DEADLINE_MS;
      const n = useThread ? await thread.count(text, deadline) : await countInSlices(tokenizer, text, deadline);
      return n ?? estimate(text);
    },
    warm() {
      if (useThread) thread.warm();
    },
    close: () => thread.close(),
  };
}
