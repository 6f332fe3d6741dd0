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
 *   tokenizer thread (tokenizer-worker.ts), until DEADLINE_MS after it was handed over (the first
 *   waits for the thread to load the tokenizer, once, a second or so). Past the deadline the text
 *   counts at four characters a token (`estimate`), as does a long text that finds MAX_WAITING
 *   others waiting for the thread. Where no thread can be started (the single
 *   executable has no worker file) a long text is counted on the event loop a slice of about a
 *   millisecond at a time, other work running between slices, with the same deadline.
 * - So counting is asynchronous: a step that estimates awaits the count first (steps/prices.ts
 *   `countPrompt`), and the budget admission awaits it before its store write, never inside it.
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
/** How long a long text may take to count, from the moment it is handed to the thread. */
export const DEADLINE_MS = 2_000;
/** How long a count waits for the thread to load the tokenizer (about a second, once) at most. */
const LOAD_MS = 10_000;
/** Texts at most waiting for the thread or counted by it (each one a copy, up to 10 MB). */
const MAX_WAITING = 8;
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

/** A thread started, and whether it loaded the tokenizer. */
interface Started {
  worker: Worker;
  ready: Promise<boolean>;
}

/**
 * The tokenizer thread: one, started at the first long text (or warm()), and again if it dies. A
 * count waits for it to load (about a second, once; at most LOAD_MS) before its deadline starts;
 * `count` answers undefined when there is no thread to count on.
 */
function createThread(onFailure: (reason: string, unloadable: boolean) => void) {
  let current: Started | null = null;
  let seq = 0;
  let closed = false;
  const pending = new Map<number, Pending>();
  const settleAll = () => {
    for (const done of pending.values()) done(null);
    pending.clear();
  };
  const start = (): Started => {
    const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
    const worker = new Worker(new URL(`./tokenizer-worker${ext}`, import.meta.url), { name: 'svc tokenizer' });
    // Never what keeps the process alive: a server that stops ends it too (close()).
    worker.unref();
    let loaded: (ok: boolean) => void = () => {};
    const ready = new Promise<boolean>((resolve) => (loaded = resolve));
    worker.on('message', (m: WorkerMessage) => {
      if ('id' in m) pending.get(m.id)?.(m.tokens);
      else {
        loaded(m.ready);
        if (!m.ready) onFailure(`the tokenizer thread could not load gpt-tokenizer: ${m.error}`, true);
      }
    });
    // Gone (it failed, could not load, or was closed): what it was counting is estimated; the next
    // long text starts another.
    worker.on('error', (err) => onFailure(`the tokenizer thread failed: ${err.message}`, false));
    worker.on('exit', () => {
      loaded(false);
      if (current?.worker !== worker) return;
      current = null;
      settleAll();
    });
    return { worker, ready };
  };
  return {
    warm() {
      if (!closed) current ??= start();
    },
    async count(text: string): Promise<number | null | undefined> {
      // Closed: no thread is started again for a count still in flight (it is counted in slices).
      if (closed) return undefined;
      const { worker, ready } = (current ??= start());
      let timer: NodeJS.Timeout | undefined;
      const loaded = await Promise.race([
        ready,
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), LOAD_MS))),
      ]);
      clearTimeout(timer);
      if (!loaded) return undefined;
      // Each text waiting is a copy in the thread's queue: past MAX_WAITING, estimated at once.
      if (pending.size >= MAX_WAITING) return null;
      const id = ++seq;
      const deadline = Date.now() + DEADLINE_MS;
      return new Promise<number | null>((resolve) => {
        const late = setTimeout(() => done(null), DEADLINE_MS + 10);
        const done: Pending = (tokens) => {
          clearTimeout(late);
          pending.delete(id);
          resolve(tokens);
        };
        pending.set(id, done);
        worker.postMessage({ id, text, deadline } satisfies CountJob);
      });
    },
    async close() {
      closed = true;
      const started = current;
      current = null;
      settleAll();
      if (started) await started.worker.terminate();
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
 * The gateway's counter: long texts on a thread, unless `thread` is false (the default in the
 * single executable, which has no worker file), then in slices. `onFailure` hears why the thread
 * failed; a thread that could not load the tokenizer is not started again.
 */
export function createTokenCounter(
  options: { thread?: boolean; onFailure?: (reason: string) => void } = {},
): TokenCounter {
  let useThread = options.thread ?? !isSea();
  const thread = createThread((reason, unloadable) => {
    if (unloadable) useThread = false;
    options.onFailure?.(reason);
  });
  return {
    async count(text) {
      if (text.length <= INLINE_CHARS || !tokenizer) return countTokens(text);
      const n = useThread ? await thread.count(text) : undefined;
      if (n !== undefined) return n ?? estimate(text);
      return (await countInSlices(tokenizer, text, Date.now() + DEADLINE_MS)) ?? estimate(text);
    },
    warm() {
      if (useThread) thread.warm();
    },
    close: () => thread.close(),
  };
}
