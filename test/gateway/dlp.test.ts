import test from 'ava';
import fc from 'fast-check';
import {
  countByKind,
  describeCounts,
  DLP_KINDS,
  findSensitive,
  redact,
  type DlpKind,
  type Finding,
} from '../../src/gateway/dlp.js';

/**
 * The gateway's data-loss detectors: known positives and near misses per kind (well-known test
 * values), how overlaps resolve, the exact redaction and wording, and properties over generated
 * values and adversarial 100 kB inputs. Fake credentials are assembled at run time so that no
 * secret scanner mistakes this file for a leak.
 */

/** [kind, exact value] for every finding, in order: the value is what a test asserts on. */
function found(text: string): Array<[DlpKind, string]> {
  return findSensitive(text).map((f) => [f.kind, text.slice(f.start, f.end)]);
}

/** ISO 13616 check digits for a country and BBAN (BigInt: independent of the module's arithmetic). */
function ibanCheckDigits(country: string, bban: string): string {
  const numeric = [...`${bban}${country}00`].map((c) => (c >= 'A' ? String(c.charCodeAt(0) - 55) : c)).join('');
  return String(98 - Number(BigInt(numeric) % 97n)).padStart(2, '0');
}

const repeat = (chars: string, n: number) => chars.repeat(Math.ceil(n / chars.length)).slice(0, n);
const FAKE = {
  openai: 'sk-proj-' + 'Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_-Q7',
  anthropic: 'sk-ant-api03-' + 'x9Y8w7V6u5T4s3R2q1P0o9N8m7L6k5J4',
  aws: 'AKIA' + 'IOSFODNN7EXAMPLE',
  github: 'ghp_' + repeat('aB3d', 36),
  githubPat: 'github_pat_' + repeat('11ABCDEFG0_', 82),
  slack: 'xoxb-' + '1234567890-0987654321-AbCdEfGhIjKl',
  stripe: 'sk_' + 'live_' + repeat('4eC39HqLyjWDarjtT1zdp7dc', 24),
  google: 'AIza' + repeat('SyD-9tSrke72PouQMnMX_7', 35),
  ours: 'ask_' + repeat('Zx_-09Ab', 43),
  jwt: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
  pem: [
    '-----BEGIN RSA PRIVATE KEY-----',
    'Proc-Type: 4,ENCRYPTED',
    'DEK-Info: AES-128-CBC,0123456789ABCDEF',
    '',
    'MIIEowIBAAKCAQEA7bq98Zx+/3c',
    'q2Jm0kXq7S1t/w==',
    '-----END RSA PRIVATE KEY-----',
  ].join('\n'),
};

test.before(() => {
  // Let V8 compile the expressions to native code before anything is timed.
  for (let i = 0; i < 20; i++)
    findSensitive(`warm up ${i} a@b.co 4111111111111111 +44 20 7946 0958 GB82WEST12345698765432 ${FAKE.openai}`);
});

test('the kinds, in the order counts are described', (t) => {
  t.deepEqual(DLP_KINDS, ['email', 'card', 'iban', 'secret', 'national_id', 'phone']);
});

test('email: practical addresses, case-insensitive; not without a dotted domain and a 2+ letter TLD', (t) => {
  t.deepEqual(found('Write to john.doe+tag@mail.example.co.uk or JANE_X-Y@EXAMPLE.COM.'), [
    ['email', 'john.doe+tag@mail.example.co.uk'],
    ['email', 'JANE_X-Y@EXAMPLE.COM'],
  ]);
  t.deepEqual(found('user@localhost a@b.c @example.com john@ john@.com'), []);
});

test('card: Visa, Amex and Mastercard test numbers, plain, spaced and hyphenated', (t) => {
  t.deepEqual(
    found(
      'pay 4111111111111111, 4111 1111 1111 1111, 4111-1111-1111-1111, 378282246310005, 3782 822463 10005, 5555555555554444',
    ),
    [
      ['card', '4111111111111111'],
      ['card', '4111 1111 1111 1111'],
      ['card', '4111-1111-1111-1111'],
      ['card', '378282246310005'],
      ['card', '3782 822463 10005'],
      ['card', '5555555555554444'],
    ],
  );
  t.deepEqual(
    found('card 4111 1111 1111 1111 12/27 cvv 123'),
    [['card', '4111 1111 1111 1111']],
    'an expiry after the groups is not part of it',
  );
});

test('card: Luhn failures, runs inside longer runs, mixed separators and zeros are not cards', (t) => {
  t.deepEqual(found('4111111111111112 378282246310006 41111111111111111 x4111111111111111 4111111111111111y'), []);
  t.deepEqual(found('4111 1111-1111 1111 | 4111  1111 1111 1111 | 0000 0000 0000 0000 | 0000000000000000'), []);
  t.deepEqual(found('order 1234567890123456 and 411111111111'), [], '16 digits failing Luhn, and 12 digits');
});

test('iban: the registry examples, grouped or not, any case', (t) => {
  t.deepEqual(
    found('to GB82 WEST 1234 5698 7654 32 or DE89370400440532013000, de89 3704 0044 0532 0130 00, NO93 8601 1117 947'),
    [
      ['iban', 'GB82 WEST 1234 5698 7654 32'],
      ['iban', 'DE89370400440532013000'],
      ['iban', 'de89 3704 0044 0532 0130 00'],
      ['iban', 'NO93 8601 1117 947'],
    ],
  );
  t.deepEqual(
    found('BE68 5390 0754 7034 done'),
    [['iban', 'BE68 5390 0754 7034']],
    'a short word after the last full group is not a group',
  );
});

test('iban: mod-97 failures and wrong registry lengths are not IBANs', (t) => {
  t.deepEqual(found('GB82 WEST 1234 5698 7654 33 GB83WEST12345698765432 DE89370400440532013001'), []);
  t.deepEqual(found('GB82WEST1234569876543 DE893704004405320130000'), [], 'one character short, one too many');
});

test('iban: a registry country needs its registered length; check digits must be 02-98', (t) => {
  const bban = 'WEST123456987654321'; // 19 characters: GB needs 18, so only an unregistered code may use it
  t.deepEqual(found(`GB${ibanCheckDigits('GB', bban)}${bban}`), []);
  t.deepEqual(found(`XA${ibanCheckDigits('XA', bban)}${bban}`), [['iban', `XA${ibanCheckDigits('XA', bban)}${bban}`]]);
  // 99 = 2 and 01 = 98 (mod 97): the same mod-97 remainder, but not check digits ISO 13616 issues.
  let n = 0;
  const withCheck = (wanted: string) => {
    while (ibanCheckDigits('DE', String(n).padStart(18, '0')) !== wanted) n++;
    return String(n).padStart(18, '0');
  };
  const low = withCheck('02');
  const high = withCheck('98');
  t.deepEqual(found(`DE02${low} DE98${high}`), [
    ['iban', `DE02${low}`],
    ['iban', `DE98${high}`],
  ]);
  t.deepEqual(found(`DE99${low} DE01${high}`), []);
});

test('secret: each credential shape is one finding', (t) => {
  for (const [name, value] of Object.entries(FAKE)) {
    t.deepEqual(found(`key: ${value} end`), [['secret', value]], name);
  }
  t.deepEqual(found(`Authorization: Bearer ${FAKE.jwt}`), [['secret', FAKE.jwt]]);
});

test('secret: near misses are not secrets', (t) => {
  const text = [
    'task-management-system-for-teams',
    'sk-short',
    'AKIA' + 'IOSFODNN7EXAMPL',
    'xAKIA' + 'IOSFODNN7EXAMPLE',
    'ghp_' + repeat('a1', 35),
    'ask_' + repeat('a1', 42),
    'ask_' + repeat('a1', 44),
    'eyJhbGciOi.short',
    '-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END EC PRIVATE KEY-----',
    '-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----',
  ].join(' ');
  t.deepEqual(found(text), []);
});

test('national_id: SSNs with valid ranges and hyphens only; NINOs with allowed prefixes', (t) => {
  t.deepEqual(found('SSN 123-45-6789 and NINO AB 12 34 56 C or AB123456C'), [
    ['national_id', '123-45-6789'],
    ['national_id', 'AB 12 34 56 C'],
    ['national_id', 'AB123456C'],
  ]);
  t.deepEqual(
    found('000-12-3456 666-12-3456 900-12-3456 123-00-4567 123-45-0000 123456789 123-45-67890 1-123-45-6789'),
    [],
  );
  t.deepEqual(found('BG123456C GB123456A DA123456C AO123456C AB123456E ab123456c'), []);
});

test('phone: international and North American shapes', (t) => {
  t.deepEqual(
    found(
      'call +44 20 7946 0958, (555) 123-4567, 555-123-4567, 555.123.4567, +1 (555) 123-4567, +14155552671, 1-555-123-4567',
    ),
    [
      ['phone', '+44 20 7946 0958'],
      ['phone', '(555) 123-4567'],
      ['phone', '555-123-4567'],
      ['phone', '555.123.4567'],
      ['phone', '+1 (555) 123-4567'],
      ['phone', '+14155552671'],
      ['phone', '1-555-123-4567'],
    ],
  );
});

test('phone: never dates, times, versions, addresses, plain digit runs, or parts of other values', (t) => {
  t.deepEqual(
    found('on 2026-11-22 at 12:30:45 (2026-11-22T10:00:00+01:00) v1.2.3 10.0.0.1 5551234567 555-123-4567-8 +1 234'),
    [],
  );
  t.deepEqual(found('4111-1111-1111-1111 DE89 3704 0044 0532 0130 00 123-45-6789'), [
    ['card', '4111-1111-1111-1111'],
    ['iban', 'DE89 3704 0044 0532 0130 00'],
    ['national_id', '123-45-6789'],
  ]);
  t.deepEqual(
    found('+1 4111 1111 1111 1111'),
    [['card', '4111 1111 1111 1111']],
    'too many digits for a phone; the card is found',
  );
});

test('findings are in order, never overlap, and one span is one kind (earliest, then longest)', (t) => {
  const text = `a@x.io 4111111111111111 then +44 20 7946 0958 and ${FAKE.aws}`;
  t.deepEqual(findSensitive(text), [
    { kind: 'email', start: 0, end: 6 },
    { kind: 'card', start: 7, end: 23 },
    { kind: 'phone', start: 29, end: 45 },
    { kind: 'secret', start: 50, end: 70 },
  ]);
  t.deepEqual(
    found('4111111111111111@example.com'),
    [['email', '4111111111111111@example.com']],
    'same start: the longer wins',
  );
  t.deepEqual(found(`${FAKE.openai}@example.com`), [['email', `${FAKE.openai}@example.com`]]);
  t.deepEqual(
    found('AB12 4111 1111 1111 1111'),
    [['card', '4111 1111 1111 1111']],
    'a failed IBAN candidate does not hide the card inside it',
  );
});

test('redact replaces each finding with its kind, and only the findings', (t) => {
  t.is(
    redact('Mail john@example.com, card 4111 1111 1111 1111.\nIBAN GB82 WEST 1234 5698 7654 32!'),
    'Mail [REDACTED:email], card [REDACTED:card].\nIBAN [REDACTED:iban]!',
  );
  t.is(redact('nothing to see here'), 'nothing to see here');
  t.is(redact(`${FAKE.pem}\nthen 123-45-6789`), '[REDACTED:secret]\nthen [REDACTED:national_id]');
});

test('redact with given findings: sorted, overlaps merged, spans outside the text refused', (t) => {
  const text = '0123456789';
  t.is(
    redact(text, [
      { kind: 'phone', start: 6, end: 8 },
      { kind: 'card', start: 1, end: 3 },
    ]),
    '0[REDACTED:card]345[REDACTED:phone]89',
  );
  t.is(
    redact(text, [
      { kind: 'card', start: 1, end: 5 },
      { kind: 'phone', start: 3, end: 7 },
    ]),
    '0[REDACTED:card]789',
  );
  t.is(redact(text, []), text);
  t.throws(() => redact(text, [{ kind: 'card', start: 5, end: 11 }]), { instanceOf: RangeError });
  t.throws(() => redact(text, [{ kind: 'card', start: 4, end: 4 }]), { instanceOf: RangeError });
});

test('countByKind counts only the kinds found', (t) => {
  const findings = findSensitive(`a@b.co c@d.co 4111111111111111 ${FAKE.ours}`);
  t.deepEqual(countByKind(findings), { email: 2, card: 1, secret: 1 });
  t.deepEqual(countByKind([]), {});
});

test('describeCounts: singular and plural, "and" before the last, kind order, never a value', (t) => {
  t.is(describeCounts({ email: 2, card: 1 }), '2 email addresses and 1 payment card number');
  t.is(describeCounts({ phone: 1 }), '1 phone number');
  t.is(describeCounts({ secret: 3, iban: 1, email: 1 }), '1 email address, 1 IBAN and 3 credentials');
  t.is(
    describeCounts({ national_id: 2, phone: 2, iban: 2, card: 2 }),
    '2 payment card numbers, 2 IBANs, 2 national ID numbers and 2 phone numbers',
  );
  t.is(describeCounts({ email: 0, secret: 1 }), '1 credential');
  t.is(describeCounts({}), 'no sensitive values');
});

// --- generated values ----------------------------------------------------------------------------

const chars = (alphabet: string, minLength: number, maxLength = minLength) =>
  fc.string({ unit: fc.constantFrom(...alphabet), minLength, maxLength });
const DIGITS = '0123456789';
const UPPER_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const ALNUM = `${UPPER_ALNUM}abcdefghijklmnopqrstuvwxyz`;
const B64URL = `${ALNUM}_-`;
const word = chars('abcdefghijklmnopqrstuvwxyz', 1, 8);

function luhnCheckDigit(payload: string): number {
  let sum = 0;
  for (let i = 0; i < payload.length; i++) {
    let d = Number(payload[payload.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return (10 - (sum % 10)) % 10;
}

/** How card numbers of each length are printed (besides unbroken). */
const CARD_GROUPS: Record<number, number[][]> = {
  13: [[4, 4, 4, 1]],
  14: [
    [4, 6, 4],
    [4, 4, 4, 2],
  ],
  15: [
    [4, 6, 5],
    [4, 4, 4, 3],
  ],
  16: [[4, 4, 4, 4]],
  17: [[4, 4, 4, 4, 1]],
  18: [[4, 4, 4, 4, 2]],
  19: [[4, 4, 4, 4, 3]],
};

const cardNumber = fc
  .integer({ min: 13, max: 19 })
  .chain((length) =>
    fc
      .tuple(fc.integer({ min: 1, max: 9 }), chars(DIGITS, length - 2))
      .map(([first, rest]) => `${first}${rest}${luhnCheckDigit(`${first}${rest}`)}`),
  );

const card = fc.tuple(cardNumber, fc.constantFrom('', ' ', '-'), fc.nat()).map(([digits, sep, pick]) => {
  if (sep === '') return digits;
  const shapes = CARD_GROUPS[digits.length]!;
  const shape = shapes[pick % shapes.length]!;
  let at = 0;
  return shape.map((n) => digits.slice(at, (at += n))).join(sep);
});

/** Registry countries with their lengths, and codes outside the registry (any length 15-34). */
const IBAN_COUNTRIES: Array<[string, number]> = [
  ['GB', 22],
  ['DE', 22],
  ['FR', 27],
  ['NL', 18],
  ['NO', 15],
  ['BE', 16],
  ['MT', 31],
  ['LC', 32],
  ['RU', 33],
];

function ibanOf(countryAndLength: fc.Arbitrary<[string, number]>): fc.Arbitrary<string> {
  return countryAndLength.chain(([country, length]) =>
    fc.tuple(chars(UPPER_ALNUM, length - 4), fc.boolean(), fc.boolean()).map(([bban, grouped, lower]) => {
      const compact = `${country}${ibanCheckDigits(country, bban)}${bban}`;
      const printed = grouped ? compact.replace(/(.{4})(?=.)/g, '$1 ') : compact;
      return lower ? printed.toLowerCase() : printed;
    }),
  );
}

const registryIban = ibanOf(fc.constantFrom(...IBAN_COUNTRIES));
const anyIban = ibanOf(
  fc.oneof(
    fc.constantFrom(...IBAN_COUNTRIES),
    fc.tuple(fc.constantFrom('XA', 'QZ', 'AA', 'ZY'), fc.integer({ min: 15, max: 34 })),
  ),
);

const secret = fc.oneof(
  chars(B64URL, 20, 60).map((s) => `sk-proj-${s}`),
  chars(B64URL, 20, 60).map((s) => `sk-ant-api03-${s}`),
  fc.tuple(fc.constantFrom('AKIA', 'ASIA'), chars(UPPER_ALNUM, 16)).map(([p, s]) => p + s),
  fc.tuple(fc.constantFrom('ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_'), chars(ALNUM, 36)).map(([p, s]) => p + s),
  chars(`${ALNUM}_`, 22, 82).map((s) => `github_pat_${s}`),
  fc
    .tuple(fc.constantFrom('xoxa-', 'xoxb-', 'xoxp-', 'xoxr-', 'xoxs-'), chars(`${ALNUM}-`, 10, 50))
    .map(([p, s]) => p + s),
  fc.tuple(fc.constantFrom('sk_live_', 'rk_live_', 'sk_test_'), chars(ALNUM, 16, 40)).map(([p, s]) => p + s),
  chars(B64URL, 35).map((s) => `AIza${s}`),
  fc.tuple(fc.constantFrom('ask_', 'ims_', 'aat_', 'art_', 'mcs_'), chars(B64URL, 43)).map(([p, s]) => p + s),
  fc.tuple(chars(B64URL, 8, 40), chars(B64URL, 8, 60), chars(B64URL, 0, 43)).map(([h, p, s]) => `eyJ${h}.${p}.${s}`),
  fc
    .tuple(
      fc.constantFrom('', 'RSA ', 'EC ', 'OPENSSH ', 'ENCRYPTED '),
      fc.array(chars(`${ALNUM}+/=`, 1, 64), { minLength: 1, maxLength: 5 }),
    )
    .map(([label, lines]) =>
      [`-----BEGIN ${label}PRIVATE KEY-----`, ...lines, `-----END ${label}PRIVATE KEY-----`].join('\n'),
    ),
);

const pad = (n: number, width: number) => String(n).padStart(width, '0');
const ssn = fc
  .tuple(
    fc.integer({ min: 1, max: 899 }).filter((a) => a !== 666),
    fc.integer({ min: 1, max: 99 }),
    fc.integer({ min: 1, max: 9999 }),
  )
  .map(([a, g, s]) => `${pad(a, 3)}-${pad(g, 2)}-${pad(s, 4)}`);
const nino = fc
  .tuple(
    fc.constantFrom(...'ABCEGHJKLMNOPRSTWXYZ'),
    fc.constantFrom(...'ABCEGHJKLMNPRSTWXYZ'),
    chars(DIGITS, 6),
    fc.constantFrom(...'ABCD'),
    fc.boolean(),
  )
  .filter(([a, b]) => !['BG', 'GB', 'KN', 'NK', 'NT', 'TN', 'ZZ'].includes(a + b))
  .map(([a, b, d, suffix, spaced]) =>
    spaced ? `${a}${b} ${d.slice(0, 2)} ${d.slice(2, 4)} ${d.slice(4)} ${suffix}` : `${a}${b}${d}${suffix}`,
  );

const phone = fc.oneof(
  fc
    .tuple(
      fc.integer({ min: 1, max: 999 }),
      fc.array(chars(DIGITS, 2, 4), { minLength: 2, maxLength: 5 }),
      fc.constantFrom(' ', '-', '.'),
    )
    .filter(([, groups]) => {
      const n = groups.join('').length;
      return n >= 7 && n <= 14;
    })
    .map(([cc, groups, sep]) => `+${cc} ${groups.join(sep)}`),
  fc
    .tuple(fc.integer({ min: 200, max: 999 }), chars(DIGITS, 3), chars(DIGITS, 4), fc.constantFrom('paren', '-', '.'))
    .map(([area, exchange, line, style]) =>
      style === 'paren' ? `(${area}) ${exchange}-${line}` : [area, exchange, line].join(style),
    ),
);

const email = fc
  .tuple(
    chars(`${ALNUM}`, 1, 10),
    fc.option(chars(`${ALNUM}_+-`, 1, 6), { nil: undefined }),
    chars('abcdefghijklmnopqrstuvwxyz0123456789', 1, 10),
    chars('abcdefghijklmnopqrstuvwxyz', 2, 6),
  )
  .map(([local, more, domain, tld]) => `${local}${more === undefined ? '' : `.${more}`}@${domain}.${tld}`);

const sensitive: fc.Arbitrary<[DlpKind, string]> = fc.oneof(
  email.map((v) => ['email', v] as [DlpKind, string]),
  card.map((v) => ['card', v] as [DlpKind, string]),
  // Registry countries only here: their fixed length decides exactly where an IBAN followed by a
  // four-letter word ends, where an unregistered code could (1 time in 97) take the word too.
  registryIban.map((v) => ['iban', v] as [DlpKind, string]),
  secret.map((v) => ['secret', v] as [DlpKind, string]),
  fc.oneof(ssn, nino).map((v) => ['national_id', v] as [DlpKind, string]),
  phone.map((v) => ['phone', v] as [DlpKind, string]),
);

/** Words and values interleaved, at least one word between two values; each value's span. */
const document = fc
  .tuple(
    fc.array(fc.tuple(fc.array(word, { minLength: 1, maxLength: 3 }), sensitive), { minLength: 1, maxLength: 6 }),
    fc.array(word, { maxLength: 3 }),
    fc.constantFrom(' ', '\n'),
  )
  .map(([pairs, tail, sep]) => {
    let text = '';
    const planted: Array<{ kind: DlpKind; value: string; start: number; end: number }> = [];
    for (const [words, [kind, value]] of pairs) {
      text += words.join(' ') + sep;
      planted.push({ kind, value, start: text.length, end: text.length + value.length });
      text += value + sep;
    }
    return { text: text + tail.join(' '), planted };
  });

function wellFormed(text: string, findings: readonly Finding[]): boolean {
  return findings.every(
    (f, i) =>
      DLP_KINDS.includes(f.kind) &&
      Number.isInteger(f.start) &&
      Number.isInteger(f.end) &&
      f.start >= 0 &&
      f.start < f.end &&
      f.end <= text.length &&
      (i === 0 || findings[i - 1]!.end <= f.start),
  );
}

test('property: every planted value is inside a finding, and redacting leaves nothing to find', (t) => {
  fc.assert(
    fc.property(document, ({ text, planted }) => {
      const findings = findSensitive(text);
      for (const p of planted) {
        if (!findings.some((f) => f.start <= p.start && p.end <= f.end))
          throw new Error(`${p.kind} not found: ${JSON.stringify(p.value)}`);
      }
      const redacted = redact(text);
      if (findSensitive(redacted).length > 0) throw new Error(`found again in ${JSON.stringify(redacted)}`);
      return planted.every((p) => !redacted.includes(p.value));
    }),
    { numRuns: 300 },
  );
  t.pass();
});

test('property: a valid card between words is found once, as a card, at its offsets', (t) => {
  fc.assert(
    fc.property(word, card, word, (before, value, after) => {
      const text = `${before} ${value} ${after}`;
      const findings = findSensitive(text);
      return (
        findings.length === 1 &&
        findings[0]!.kind === 'card' &&
        findings[0]!.start === before.length + 1 &&
        findings[0]!.end === before.length + 1 + value.length
      );
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('property: a valid IBAN is found, registered country or not', (t) => {
  fc.assert(
    fc.property(anyIban, (value) => {
      const findings = findSensitive(`pay to ${value}, thanks`);
      return (
        findings.length === 1 &&
        findings[0]!.kind === 'iban' &&
        findings[0]!.start === 7 &&
        findings[0]!.end === 7 + value.length
      );
    }),
    { numRuns: 500 },
  );
  t.pass();
});

const noise = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        ...'0123456789 -._+@()\naZ/:',
        '4111',
        '1111 ',
        'GB82',
        'AKIA',
        'sk-',
        'ask_',
        'eyJ',
        '-----BEGIN PRIVATE KEY-----',
        '-----END PRIVATE KEY-----',
        '555-',
        '+44 ',
      ),
      sensitive.map(([, v]) => v),
    ),
    { maxLength: 60 },
  )
  .map((parts) => parts.join(''));

test('property: findings are ordered, never overlap and lie within the text, whatever the text', (t) => {
  fc.assert(
    fc.property(
      fc.oneof(
        noise,
        fc.string({ maxLength: 200 }),
        document.map((d) => d.text),
      ),
      (text) => wellFormed(text, findSensitive(text)),
    ),
    { numRuns: 500 },
  );
  t.pass();
});

// --- time ------------------------------------------------------------------------------------

const SIZE = 100_000;
const BUDGET_MS = 200;

function timed(text: string): number {
  const t0 = performance.now();
  findSensitive(text);
  return performance.now() - t0;
}

test.serial('adversarial 100 kB inputs each finish well within the budget', (t) => {
  const inputs: Record<string, string> = {
    digits: repeat('4', SIZE),
    'digit groups': repeat('4111 ', SIZE),
    'hyphen digits': repeat('1-', SIZE),
    'dotted digits': repeat('1.', SIZE),
    'a@a@': repeat('a@', SIZE),
    'dotted domain': `x@${repeat('a.', SIZE)}`,
    'long local part': `${repeat('a.', SIZE)}@`,
    'BEGIN without END': repeat('-----BEGIN RSA PRIVATE KEY-----\n', SIZE),
    'BEGIN then body': `-----BEGIN PRIVATE KEY-----\n${repeat('AB-', SIZE)}`,
    '+1 ': repeat('+1 ', SIZE),
    eyJ: repeat('eyJ', SIZE),
    'eyJ segments': repeat('eyJabcdefgh.', SIZE),
    'IBAN heads': repeat('GB82 ', SIZE),
    'unregistered IBAN heads': repeat('XA82 ', SIZE),
    'IBAN groups': `GB82${repeat(' WEST', SIZE)}`,
    'NINO heads': repeat('AB 12 ', SIZE),
    'SSN heads': repeat('123-45-', SIZE),
    'phone heads': repeat('(555) ', SIZE),
    'Amex-like': repeat('3782 822463 10005 ', SIZE),
    'sk-': repeat('sk-', SIZE),
    ask_: repeat('ask_', SIZE),
    prose: repeat('The quick brown fox jumps over the lazy dog. ', SIZE),
    'many findings': repeat(`mail a@b.co card 4111111111111111 call +44 20 7946 0958 ${FAKE.aws} `, SIZE),
  };
  for (const [name, text] of Object.entries(inputs)) {
    const ms = timed(text);
    t.true(ms < BUDGET_MS, `${name}: ${ms.toFixed(1)} ms`);
  }
});

test.serial('property: any short pattern repeated to 100 kB finishes well within the budget', (t) => {
  const unit = fc.constantFrom(
    '4',
    '1',
    ' ',
    '-',
    '.',
    '@',
    'a',
    'A',
    '_',
    '+1 ',
    '(',
    ')',
    '\n',
    '-----BEGIN ',
    'PRIVATE KEY-----',
    'eyJ',
    'AKIA',
    'sk-',
    'GB82',
    '123-',
    '45',
    'AB ',
  );
  fc.assert(
    fc.property(
      fc.array(unit, { minLength: 1, maxLength: 6 }),
      (units) => timed(repeat(units.join(''), SIZE)) < BUDGET_MS,
    ),
    { numRuns: 40 },
  );
  t.pass();
});

test.serial('text without digits, @, - or _ is cheap', (t) => {
  const text = repeat('Plain prose, with punctuation; and Capitals! ', 1_000_000);
  const ms = timed(text);
  t.true(ms < 20, `1 MB of prose: ${ms.toFixed(1)} ms`);
});
