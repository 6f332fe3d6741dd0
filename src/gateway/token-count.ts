/**
 * Token counting in linear time: gpt-tokenizer's own pre-token split and byte-pair merge (the
 * o200k_base encoding), with one change. Its merge is quadratic in the length of a pre-token, and
 * a run of letters, digits-free punctuation or whitespace without a break is one pre-token however
 * long it is ('a' repeated 80,000 times took 2.9 s, 320,000 took 45 s). Here a pre-token longer
 * than CHUNK characters is merged in pieces of CHUNK, so the work is at most CHUNK times the
 * text's length. Ordinary text (prose, code, JSON) has no such pre-token and counts exactly as
 * gpt-tokenizer counts it; a long run counts within a fraction of a percent of it.
 *
 * This file imports nothing of the application: it is also the body of the tokenizer's worker
 * thread (tokenizer-worker.ts), which loads it on its own.
 */

/** What is used of gpt-tokenizer's encoding (its byte-pair core, not part of its typed API). */
interface BpeCore {
  tokenSplitRegex: RegExp;
  getBpeRankFromString(piece: string): number | undefined;
  bytePairEncode(piece: string): number[];
}

/** The longest piece merged at once, in UTF-16 code units (at most 768 bytes of UTF-8). */
export const CHUNK = 256;

/** The text is split into pre-tokens this many characters at a time. */
const WINDOW = 65_536;

/**
 * How many characters are counted between two looks at the clock: a millisecond of work or less
 * for prose, up to 4 ms for random letters (1 to 4 µs a character), against 50 ns a look.
 */
const CHARS_PER_LOOK = 1_024;

/**
 * An unfinished count: `run` goes on until the text ends (the count) or the clock passes `until`
 * (Date.now() milliseconds; null, and a later `run` goes on from there).
 */
export interface Counting {
  run(until: number): number | null;
}

export interface Tokenizer {
  /** Counts `text` at once. */
  count(text: string): number;
  /** Starts counting `text`, to be run a slice at a time. */
  start(text: string): Counting;
}

/** The counter of a loaded gpt-tokenizer module (its default export, the o200k_base encoding). */
export function tokenizerOf(module: { default: unknown }): Tokenizer {
  const core = (module.default as { bytePairEncodingCoreProcessor?: BpeCore }).bytePairEncodingCoreProcessor;
  if (!core || !(core.tokenSplitRegex instanceof RegExp) || typeof core.bytePairEncode !== 'function')
    throw new Error('gpt-tokenizer has no byte-pair core where this version expects it');
  const split = new RegExp(core.tokenSplitRegex.source, core.tokenSplitRegex.flags);
  const merged = (piece: string): number =>
    core.getBpeRankFromString(piece) !== undefined ? 1 : core.bytePairEncode(piece).length;
  const start = (text: string): Counting => {
    let n = 0;
    // The text is split a window at a time, so that no one step of the split regex takes long
    // (a single pre-token of ten million letters would be one match).
    let next = 0;
    let base = 0;
    let window = '';
    let matches: IterableIterator<RegExpMatchArray> | null = null;
    // A pre-token longer than CHUNK, merged a chunk at a time, and how far it is.
    let long = '';
    let at = 0;
    return {
      run(until) {
        for (let budget = CHARS_PER_LOOK; ; budget = CHARS_PER_LOOK) {
          while (budget > 0) {
            if (at < long.length) {
              let end = Math.min(long.length, at + CHUNK);
              // Never between the two halves of a surrogate pair.
              const last = long.charCodeAt(end - 1);
              if (end < long.length && last >= 0xd800 && last <= 0xdbff) end--;
              n += merged(long.slice(at, end));
              budget -= end - at;
              at = end;
              continue;
            }
            if (matches === null) {
              if (next >= text.length) return n;
              base = next;
              next = Math.min(text.length, base + WINDOW);
              // Never between the two halves of a surrogate pair.
              const last = text.charCodeAt(next - 1);
              if (next < text.length && last >= 0xd800 && last <= 0xdbff) next--;
              window = text.slice(base, next);
              matches = window.matchAll(split);
            }
            const found = matches.next();
            if (found.done) {
              matches = null;
              continue;
            }
            const piece = found.value[0];
            const index = found.value.index!;
            if (next < text.length && index + piece.length === window.length) {
              // It may go on past the window: split again from its start, unless it fills the
              // whole window (then it is merged in chunks as it is).
              matches = null;
              if (index > 0) {
                next = base + index;
                continue;
              }
            }
            if (piece.length > CHUNK) [long, at] = [piece, 0];
            else {
              n += merged(piece);
              budget -= piece.length;
            }
          }
          if (Date.now() > until) return null;
        }
      },
    };
  };
  return { start, count: (text) => (text === '' ? 0 : start(text).run(Infinity)!) };
}
