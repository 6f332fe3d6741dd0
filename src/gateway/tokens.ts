/**
 * Token counts of prompt text, with a real tokenizer (gpt-tokenizer, o200k_base: the encoding of
 * OpenAI's current models; for other vendors' models an estimate close to theirs, far closer than
 * four characters a token). Used for POST /v1/messages/count_tokens when no Anthropic-kind vendor
 * is asked, and for a budget's reservation.
 * Rules:
 * - The tokenizer's tables take a second or more to load, so they are loaded once, off the
 *   request path: the gateway starts loading them when it is created, and a model request that
 *   arrives before they are ready waits for them once (service.ts). Counting itself is synchronous,
 *   so it can run inside the budget admission's store write.
 * - Until the tables are loaded (only a caller that did not wait), text counts at four characters
 *   a token.
 * - Special-token text in a prompt (`<|endoftext|>`) is counted as ordinary text, never refused.
 */
type Count = (text: string) => number;

let counter: Count | null = null;
let loading: Promise<Error | null> | null = null;

/**
 * Starts loading the tokenizer (once); resolves when it is ready, or with the error that kept it
 * from loading (then text keeps counting at four characters a token).
 */
export function loadTokenizer(): Promise<Error | null> {
  loading ??= import('gpt-tokenizer').then(
    (m) => {
      counter = (text) => m.countTokens(text, { disallowedSpecial: new Set() });
      return null;
    },
    (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
  );
  return loading;
}

export const tokenizerReady = (): boolean => counter !== null;

/** Tokens in `text` (four characters a token until the tokenizer is loaded). */
export function countTokens(text: string): number {
  if (text === '') return 0;
  return counter ? counter(text) : Math.ceil(text.length / 4);
}
