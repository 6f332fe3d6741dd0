import { metrics } from '../lib/metrics.js';
import type { DataLossMode } from '../settings/schema.js';
import { countByKind, findSensitive, redact, type DlpKind, type Finding } from './dlp.js';

/**
 * Holding back the tail of an answer's text on its way out (response-screen.ts says the rule),
 * and the counts by kind of what was found.
 */
export type Counts = Partial<Record<DlpKind, number>>;

const HOLD = 256;
const MAX_HOLD = 16 * 1024;
/** The last white space of a text (one pass: each try runs to the next space at most). */
const LAST_SPACE = /\s\S*$/;

/** Adds the findings' counts by kind to `total`. */
export const addFindings = (total: Counts, findings: readonly Finding[]): void => {
  for (const [kind, n] of Object.entries(countByKind(findings)) as Array<[DlpKind, number]>)
    total[kind] = (total[kind] ?? 0) + n;
};

/** The findings metric (the prompt's, with `mode`). */
export const countFindings = (counts: Counts, mode: DataLossMode): void => {
  for (const [kind, n] of Object.entries(counts)) metrics.dataLossFindings.inc({ kind, mode }, n);
};

/** One choice's or block's text on its way out: holds the tail, releases the rest redacted. */
export class TextHold {
  private pending = '';
  /** How long `pending` must grow before it is screened again. */
  private screenAt = 0;
  private readonly mode: 'redact' | 'block';
  private readonly found: Counts;

  constructor(mode: 'redact' | 'block', found: Counts) {
    this.mode = mode;
    this.found = found;
  }

  /** The text that may go out now; null when a finding blocks the answer. */
  push(text: string): string | null {
    this.pending += text;
    // What is held is screened again with each new piece: only once the new text is a 64th of
    // what is held, so the work stays linear in the answer (a 16 KiB tail without a space,
    // screened again at every 4-character delta, took 25 s for an 80 KB answer). Holding longer
    // never changes what is released, only when.
    if (this.pending.length < this.screenAt) return '';
    const released = this.release(false);
    this.screenAt = this.pending.length + (this.pending.length >> 6);
    return released;
  }

  /** Everything held, at the end of the text; null when a finding blocks the answer. */
  flush(): string | null {
    return this.release(true);
  }

  private release(all: boolean): string | null {
    const p = this.pending;
    const findings = findSensitive(p);
    if (this.mode === 'block' && findings.length > 0) {
      addFindings(this.found, findings);
      this.pending = '';
      return null;
    }
    let cut = all ? p.length : Math.max(0, p.length - HOLD);
    if (!all && cut > 0) {
      const floor = Math.max(0, p.length - MAX_HOLD);
      // Back to just after the last space before the cut (the cut itself when it is at a space).
      if (!/\s/.test(p[cut]!)) {
        const last = LAST_SPACE.exec(p.slice(floor, cut));
        cut = last ? floor + last.index + 1 : floor;
      }
      const begin = p.lastIndexOf('-----BEGIN', cut);
      if (begin >= floor && begin !== -1 && p.indexOf('-----END', begin) === -1) cut = Math.min(cut, begin);
      for (const f of findings) if (f.start < cut && f.end > cut) cut = Math.max(floor, f.start);
    }
    const out = findings.filter((f) => f.end <= cut);
    addFindings(this.found, out);
    this.pending = p.slice(cut);
    return redact(p.slice(0, cut), out);
  }
}
