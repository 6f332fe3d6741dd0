/**
 * Data-loss detectors for the model gateway: which spans of a prompt are sensitive values, before
 * the prompt goes to an outside vendor. Pure: no I/O, no logging, no dependency. The caller
 * decides what a workspace's setting does (`off`, `redact`, `block`); this module only finds,
 * counts, redacts and describes, and never puts a found value into anything it returns.
 *
 * Rules enforced ("boundary" = the neighbouring character is not an ASCII letter, digit or `_`):
 * - email: local part of letters, digits and `. _ % + -` (1-64, not starting with `.`), `@`, one
 *   to 16 dot-separated DNS labels, then a TLD of 2+ letters. Case-insensitive.
 * - card: 13-19 digits at boundaries, contiguous or in the printed groupings (4-4-4-1..4,
 *   4-4-4-4-1..3, Amex 4-6-5, Diners 4-6-4) with ONE separator kind (space or hyphen); passes Luhn;
 *   first digit not 0 (no issuer uses it, and runs of zeros pass Luhn). A grouped run that fails
 *   is cut back to its longest prefix ending at a separator that passes (a card followed by an
 *   expiry or CVV); a contiguous run that fails is not a card.
 * - iban: 2 letters, 2 check digits (02-98), then 11-30 letters/digits, contiguous or in groups of
 *   4 separated by single spaces; ISO 13616 mod-97 must equal 1 (case-insensitive). A registry
 *   country must have its registered length; other codes are allowed any length 15-34. A grouped
 *   candidate that fails is cut back to its longest valid prefix ending at a space (a short word
 *   after an IBAN looks like one more group).
 * - secret (left boundary also excludes `-`): `sk-` + 20+ of [A-Za-z0-9_-] (OpenAI `sk-`,
 *   `sk-proj-`; Anthropic `sk-ant-`); AWS `AKIA`/`ASIA` + 16 [A-Z0-9]; GitHub `ghp_ gho_ ghu_ ghs_
 *   ghr_` + 36+ alphanumerics and `github_pat_` + 22+ [A-Za-z0-9_]; Slack `xox[abprs]-` + 10+
 *   [A-Za-z0-9-]; Stripe `sk_live_ rk_live_ sk_test_ rk_test_` + 16+ alphanumerics; Google `AIza` +
 *   exactly 35 [A-Za-z0-9_-]; ours `ask_ ims_ aat_ art_ mcs_ whs_` + exactly 43 base64url; a JWT
 *   (`eyJ` + 8+ base64url, `.`, 8+ base64url, `.`, optional signature); a PEM block from
 *   `-----BEGIN <label>PRIVATE KEY-----` to the `-----END` with the same label, as one finding.
 *   The body may not contain `--` and has at most 256 single hyphens, so a BEGIN without its END
 *   stops at the next marker (linear time); a BEGIN without END is not a finding.
 * - national_id: US SSN `AAA-GG-SSSS` with hyphens (area not 000, 666, 900-999; group not 00;
 *   serial not 0000), not inside a longer hyphenated digit run; UK National Insurance number in
 *   capitals: prefix letters without D F I Q U V (second letter also not O), prefix not BG GB KN
 *   NK NT TN ZZ, six digits, suffix A-D, an optional single space between the pairs.
 * - phone: `+` country code (1-3 digits, not starting 0), an optional parenthesised group, then
 *   7-14 digits with single space, hyphen or dot separators; a longer digit run is not a phone.
 *   North American `(NXX) NXX-XXXX`, `NXX-NXX-XXXX`, `NXX.NXX.XXXX` (area code 2-9 first, optional
 *   `1 ` prefix), not inside a longer hyphen/dot digit run. A digit run without `+` and without
 *   separators is never a phone, nor are dates, times and version strings (none has the shape).
 * Resolution: the earliest start wins; at the same start the longest valid match of any kind
 * (one finding per span, never two kinds); findings never overlap. A candidate failing its
 * validator is dropped and the scan resumes one character after its start: a value that starts
 * inside a rejected candidate is still found when it has its own boundary (`AB12 4111 1111 1111
 * 1111` fails as an IBAN and holds a card), but never from the middle of a digit or letter run.
 * Cost: one regex pass (every pattern linear, unbounded repeats only over single classes), plus
 * anchored re-checks and validators only where a candidate starts; text without a digit, `@`,
 * `_`, `-` or one of the all-letter key prefixes is answered by a single pre-check.
 */

export type DlpKind = 'email' | 'card' | 'iban' | 'secret' | 'national_id' | 'phone';
export const DLP_KINDS: readonly DlpKind[] = Object.freeze([
  'email',
  'card',
  'iban',
  'secret',
  'national_id',
  'phone',
] as const);

/** A sensitive value at [start, end) in UTF-16 code units. */
export interface Finding {
  kind: DlpKind;
  start: number;
  end: number;
}

// Every pattern is linear: each quantified part is a single character class, or a group whose
// repetitions are separated by a character the group cannot contain, and every lookbehind stops
// a pattern from restarting inside a run it already rejected.
const L = '(?<![A-Za-z0-9_])';
const R = '(?![A-Za-z0-9_])';

/**
 * `n` or more of a class, written `{n}` + `*`: V8 keeps a backtrack entry per character for
 * `{n,}` and overflows its stack on multi-megabyte runs; `*` over a class does not.
 */
function atLeast(n: number, cls: string): string {
  return `${cls}{${n}}${cls}*`;
}

function cardGroups(sep: string): string {
  return String.raw`\d{4}(?:${sep}\d{4}){2}${sep}(?:\d{4}(?:${sep}\d{1,3})?|\d{1,3})|\d{4}${sep}\d{6}${sep}\d{4,5}`;
}

const PATTERNS: Record<DlpKind, string> = {
  email: String.raw`(?<![A-Za-z0-9._%+-])[A-Za-z0-9_%+-][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,16}[A-Za-z]{2,63}(?![A-Za-z0-9])`,
  card: String.raw`${L}(?:\d{13,19}|${cardGroups(' ')}|${cardGroups('-')})${R}`,
  iban: String.raw`${L}[A-Za-z]{2}\d{2}(?:[A-Za-z0-9]{11,30}|(?: [A-Za-z0-9]{4}){2,7}(?: [A-Za-z0-9]{1,4})?)${R}`,
  secret:
    '(?<![A-Za-z0-9_-])(?:' +
    [
      String.raw`sk-${atLeast(20, '[A-Za-z0-9_-]')}`,
      String.raw`(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])`,
      String.raw`gh[pousr]_${atLeast(36, '[A-Za-z0-9]')}`,
      String.raw`github_pat_${atLeast(22, '[A-Za-z0-9_]')}`,
      String.raw`xox[abprs]-${atLeast(10, '[A-Za-z0-9-]')}`,
      String.raw`[sr]k_(?:live|test)_${atLeast(16, '[A-Za-z0-9]')}`,
      String.raw`AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])`,
      String.raw`(?:ask|ims|aat|art|mcs|whs)_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])`,
      String.raw`eyJ${atLeast(8, '[A-Za-z0-9_-]')}\.${atLeast(8, '[A-Za-z0-9_-]')}\.[A-Za-z0-9_-]*`,
      // At most 256 single hyphens in the body (encrypted keys' headers have a few): the outer
      // loop is bounded, so a hyphen-heavy BEGIN without END cannot exhaust the regex stack.
      String.raw`-----BEGIN (?<pemLabel>[A-Z0-9 ]{0,40})PRIVATE KEY(?: BLOCK)?-----[^-]*(?:-(?!-)[^-]*){0,256}-----END \k<pemLabel>PRIVATE KEY(?: BLOCK)?-----`,
    ].join('|') +
    ')',
  national_id: String.raw`${L}(?:(?<!\d-)\d{3}-\d{2}-\d{4}(?!-\d)|[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D])${R}`,
  phone: String.raw`(?<![A-Za-z0-9_+])(?:\+[1-9]\d{0,2}(?:[ .-]?\(\d{1,4}\))?(?:[ .-]?\d){7,14}(?![ .-]?\d)|(?<!\d[.-])(?:1[ .-])?(?:\([2-9]\d\d\) ?|[2-9]\d\d[.-])\d{3}[.-]\d{4}(?![.-]\d))${R}`,
};

/** The scanner: one pass finds the next position where any kind's shape starts. */
const SCANNER = new RegExp(DLP_KINDS.map((k) => `(?<${k}>${PATTERNS[k]})`).join('|'), 'g');
/** Per kind, anchored: only run at a position the scanner stopped at, to see every kind there. */
const AT = Object.fromEntries(DLP_KINDS.map((k) => [k, new RegExp(PATTERNS[k], 'y')])) as Record<DlpKind, RegExp>;
/** The characters each pattern can start with (keep in step with PATTERNS). */
const FIRST: Record<DlpKind, RegExp> = {
  email: /[A-Za-z0-9_%+-]/,
  card: /\d/,
  iban: /[A-Za-z]/,
  secret: /[sArgxaime-]/,
  national_id: /[0-9A-Z]/,
  phone: /[+(0-9]/,
};
/** Per ASCII character, one bit per kind (DLP_KINDS order) that can start there. */
const STARTS = Uint8Array.from({ length: 128 }, (_, c) =>
  DLP_KINDS.reduce((bits, k, i) => (FIRST[k].test(String.fromCharCode(c)) ? bits | (1 << i) : bits), 0),
);
/** Every kind needs one of these (AWS and Google keys and JWTs can be all letters). */
const MAY_CONTAIN = /[0-9@_-]|A(?:KIA|SIA|Iza)|eyJ/;

/** Returns the end of the longest valid value in [start, end), or -1. */
type Validator = (text: string, start: number, end: number) => number;
const accept: Validator = (_text, _start, end) => end;

const VALIDATORS: Record<DlpKind, Validator> = {
  email: accept,
  secret: accept,
  phone: accept,
  card: cardEnd,
  iban: ibanEnd,
  national_id: (text, start, end) => (validNationalId(text, start, end) ? end : -1),
};

/**
 * Every sensitive value in the text, in order, non-overlapping (where matches overlap, the
 * earlier-starting wins; at the same start the longer; kinds never double count one span).
 * @example findSensitive('card 4111 1111 1111 1111') // [{ kind: 'card', start: 5, end: 24 }]
 */
export function findSensitive(text: string): Finding[] {
  const findings: Finding[] = [];
  if (!MAY_CONTAIN.test(text)) return findings;
  SCANNER.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = SCANNER.exec(text)) !== null) {
    const start = m.index;
    let kind: DlpKind | undefined;
    let end = -1;
    // Alternatives are tried in DLP_KINDS order, so kinds before the one that matched did not
    // match here; later kinds might, and might be longer or valid where this one is not. With
    // today's patterns only an email shares a start with another kind (and is the longer), so
    // this guards the contract against future patterns rather than changing today's answers.
    const groups = m.groups!;
    let first = 0;
    while (groups[DLP_KINDS[first]!] === undefined) first++;
    const code = text.charCodeAt(start);
    const others = code < 128 ? STARTS[code]! : 0;
    for (let i = first; i < DLP_KINDS.length; i++) {
      const k = DLP_KINDS[i]!;
      let candidateEnd: number;
      if (i === first) candidateEnd = start + m[0].length;
      else {
        if ((others & (1 << i)) === 0) continue;
        const at = AT[k];
        at.lastIndex = start;
        const hit = at.exec(text);
        if (hit === null) continue;
        candidateEnd = start + hit[0].length;
      }
      const validEnd = VALIDATORS[k](text, start, candidateEnd);
      if (validEnd > end) {
        end = validEnd;
        kind = k;
      }
    }
    if (kind === undefined) {
      SCANNER.lastIndex = start + 1;
      continue;
    }
    findings.push({ kind, start, end });
    SCANNER.lastIndex = end;
  }
  return findings;
}

/** Counts per kind; only kinds found appear. */
export function countByKind(findings: readonly Finding[]): Partial<Record<DlpKind, number>> {
  const counts: Partial<Record<DlpKind, number>> = {};
  for (const f of findings) counts[f.kind] = (counts[f.kind] ?? 0) + 1;
  return counts;
}

/**
 * The text with each finding replaced by `[REDACTED:<kind>]`. Given findings are sorted first and
 * overlapping ones merged into the earlier (so whatever any of them covers is removed); a finding
 * outside the text or with start >= end is a caller's bug and throws a RangeError.
 */
export function redact(text: string, findings: readonly Finding[] = findSensitive(text)): string {
  if (findings.length === 0) return text;
  for (const f of findings) {
    if (
      !Number.isInteger(f.start) ||
      !Number.isInteger(f.end) ||
      f.start < 0 ||
      f.end > text.length ||
      f.start >= f.end
    ) {
      throw new RangeError(`redact: finding [${f.start}, ${f.end}) is not a span of a ${text.length}-character text`);
    }
  }
  const ordered = [...findings].sort((a, b) => a.start - b.start || b.end - a.end);
  let out = '';
  let cursor = 0;
  for (const f of ordered) {
    if (f.end <= cursor) continue;
    if (f.start < cursor) {
      // Overlaps the previous replacement: that one already stands for this span's start.
      cursor = f.end;
      continue;
    }
    out += text.slice(cursor, f.start) + `[REDACTED:${f.kind}]`;
    cursor = f.end;
  }
  return out + text.slice(cursor);
}

const NOUNS: Record<DlpKind, readonly [string, string]> = {
  email: ['email address', 'email addresses'],
  card: ['payment card number', 'payment card numbers'],
  iban: ['IBAN', 'IBANs'],
  secret: ['credential', 'credentials'],
  national_id: ['national ID number', 'national ID numbers'],
  phone: ['phone number', 'phone numbers'],
};

/**
 * A plain-English summary in DLP_KINDS order, e.g. "2 email addresses and 1 payment card number"
 * or "1 IBAN, 3 credentials and 1 phone number". Counts that are not positive integers are left
 * out; nothing left gives "no sensitive values".
 */
export function describeCounts(counts: Partial<Record<DlpKind, number>>): string {
  const parts: string[] = [];
  for (const k of DLP_KINDS) {
    const n = counts[k];
    if (n === undefined || !Number.isInteger(n) || n <= 0) continue;
    parts.push(`${n} ${NOUNS[k][n === 1 ? 0 : 1]}`);
  }
  if (parts.length === 0) return 'no sensitive values';
  if (parts.length === 1) return parts[0]!;
  return `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)!}`;
}

// --- validators --------------------------------------------------------------------------------

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/**
 * One pass over a card candidate: the whole candidate and each prefix ending at a separator are
 * checked (13-19 digits, Luhn), and the end of the longest valid one is returned, or -1. Luhn
 * doubles every second digit counted from the right, so both parities are summed as we go and
 * a prefix of n digits uses the sum that doubles the digits whose index has n's parity.
 */
function cardEnd(text: string, start: number, end: number): number {
  if (text.charCodeAt(start) === 0x30) return -1;
  let digits = 0;
  let evenDoubled = 0;
  let oddDoubled = 0;
  let best = -1;
  for (let i = start; i <= end; i++) {
    const c = i < end ? text.charCodeAt(i) : 0x20;
    if (isDigit(c)) {
      const d = c - 0x30;
      const doubled = d > 4 ? d * 2 - 9 : d * 2;
      if (digits % 2 === 0) {
        evenDoubled += doubled;
        oddDoubled += d;
      } else {
        evenDoubled += d;
        oddDoubled += doubled;
      }
      digits++;
    } else if (digits >= 13 && digits <= 19 && (digits % 2 === 0 ? evenDoubled : oddDoubled) % 10 === 0) {
      best = i;
    }
  }
  return best;
}

/** ISO 13616 registry lengths (SWIFT IBAN registry); other country codes may be 15-34 long. */
const IBAN_LENGTHS: ReadonlyMap<number, number> = new Map(
  Object.entries({
    AD: 24,
    AE: 23,
    AL: 28,
    AT: 20,
    AZ: 28,
    BA: 20,
    BE: 16,
    BG: 22,
    BH: 22,
    BI: 27,
    BR: 29,
    BY: 28,
    CH: 21,
    CR: 22,
    CY: 28,
    CZ: 24,
    DE: 22,
    DJ: 27,
    DK: 18,
    DO: 28,
    EE: 20,
    EG: 29,
    ES: 24,
    FI: 18,
    FK: 18,
    FO: 18,
    FR: 27,
    GB: 22,
    GE: 22,
    GI: 23,
    GL: 18,
    GR: 27,
    GT: 28,
    HN: 28,
    HR: 21,
    HU: 28,
    IE: 22,
    IL: 23,
    IQ: 23,
    IS: 26,
    IT: 27,
    JO: 30,
    KW: 30,
    KZ: 20,
    LB: 28,
    LC: 32,
    LI: 21,
    LT: 20,
    LU: 20,
    LV: 21,
    LY: 25,
    MC: 27,
    MD: 24,
    ME: 22,
    MK: 19,
    MN: 20,
    MR: 27,
    MT: 31,
    MU: 30,
    NI: 28,
    NL: 18,
    NO: 15,
    PK: 24,
    PL: 28,
    PS: 29,
    PT: 25,
    QA: 29,
    RO: 24,
    RS: 22,
    RU: 33,
    SA: 24,
    SC: 31,
    SD: 18,
    SE: 24,
    SI: 19,
    SK: 24,
    SM: 27,
    ST: 25,
    SV: 28,
    TL: 23,
    TN: 24,
    TR: 26,
    UA: 29,
    VA: 22,
    VG: 24,
    XK: 20,
  }).map(([code, length]) => [(code.charCodeAt(0) << 8) | code.charCodeAt(1), length]),
);

function upper(c: number): number {
  return c >= 0x61 ? c - 0x20 : c;
}

/**
 * One pass over an IBAN candidate (no slicing: adversarial input makes many candidates): the
 * whole candidate and each prefix ending at a space are checked, and the end of the longest
 * valid one is returned, or -1. ISO 13616 moves the first four characters to the end and reads
 * letters as 10-35; those four are always letter, letter, digit, digit (the pattern says so), so
 * they append six decimal digits: rest * 10^6 + tail. Everything stays below 2^53.
 */
function ibanEnd(text: string, start: number, end: number): number {
  const check = (text.charCodeAt(start + 2) - 0x30) * 10 + text.charCodeAt(start + 3) - 0x30;
  if (check < 2 || check > 98) return -1;
  const a = upper(text.charCodeAt(start));
  const b = upper(text.charCodeAt(start + 1));
  const known = IBAN_LENGTHS.get((a << 8) | b);
  const tail = (a - 55) * 10_000 + (b - 55) * 100 + check;
  let rest = 0;
  let length = 4;
  let best = -1;
  for (let i = start + 4; i <= end; i++) {
    const c = i < end ? text.charCodeAt(i) : 0x20;
    if (c !== 0x20) {
      rest = mod97Step(rest, c);
      length++;
      continue;
    }
    const lengthOk = known === undefined ? length >= 15 && length <= 34 : length === known;
    if (lengthOk && (rest * 1_000_000 + tail) % 97 === 1) best = i;
  }
  return best;
}

function mod97Step(rest: number, c: number): number {
  return isDigit(c) ? (rest * 10 + c - 0x30) % 97 : (rest * 100 + upper(c) - 55) % 97;
}

const NINO_BAD_PREFIXES = new Set(['BG', 'GB', 'KN', 'NK', 'NT', 'TN', 'ZZ']);

function validNationalId(text: string, start: number, end: number): boolean {
  if (!isDigit(text.charCodeAt(start))) return !NINO_BAD_PREFIXES.has(text.slice(start, start + 2));
  const area = Number(text.slice(start, start + 3));
  return (
    area !== 0 &&
    area !== 666 &&
    area < 900 &&
    text.slice(start + 4, start + 6) !== '00' &&
    text.slice(start + 7, end) !== '0000'
  );
}
