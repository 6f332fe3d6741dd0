import test from 'ava';
import fc from 'fast-check';
import { cardBlocks } from '../../src/chat/card.js';
import { describeVerdict } from '../../src/cli/receipt-text.js';
import { CURRENCY_EXPONENTS, currencyExponent, formatMoney, formatMicroDollars } from '../../src/lib/money.js';

/**
 * Money as people read it (issue 37): one style everywhere ("EUR 20.00", "JPY 2,000", "KWD 2.000"),
 * ISO 4217's decimals even where the runtime's locale data has others, exact digits at any size.
 */

const SHOWN = /^(-?)([A-Z]{3}) (\d{1,3}(?:,\d{3})*)(?:\.(\d+))?$/;

test('formatMoney: the digits shown are the minor units over 10 to the currency exponent, whatever the size', (t) => {
  const currency = fc.constantFrom('EUR', 'JPY', 'KWD', 'USD', 'CLF', 'HUF', 'IQD', 'XYZ', 'XAU');
  const minor = fc.oneof(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.integer({ min: -1e9, max: 1e9 }));
  fc.assert(
    fc.property(minor, currency, (amount, code) => {
      const text = formatMoney(amount, code);
      const parts = SHOWN.exec(text);
      if (!parts) return false;
      const [, sign, shownCode, whole, fraction = ''] = parts;
      const exponent = currencyExponent(code);
      const digits = BigInt(`${whole!.replace(/,/g, '')}${fraction}`);
      return (
        shownCode === code &&
        fraction.length === exponent &&
        (sign === '-' ? -digits : digits) === BigInt(amount) &&
        (sign === '-') === BigInt(amount) < 0n
      );
    }),
  );
  t.pass();
});

test('formatMoney: EUR, JPY and KWD in their own decimals; ISO 4217 where the locale data differs', (t) => {
  t.is(formatMoney(2000, 'EUR'), 'EUR 20.00');
  t.is(formatMoney(2000, 'JPY'), 'JPY 2,000');
  t.is(formatMoney(2000, 'KWD'), 'KWD 2.000');
  t.is(formatMoney(1, 'KWD'), 'KWD 0.001');
  t.is(formatMoney(Number.MAX_SAFE_INTEGER, 'EUR'), 'EUR 90,071,992,547,409.91');
  t.is(formatMoney(123456789012345678901234n, 'JPY'), 'JPY 123,456,789,012,345,678,901,234');
  // ICU shows these with no decimals; ISO 4217 gives HUF two and IQD three.
  t.is(formatMoney(100000, 'HUF'), 'HUF 1,000.00');
  t.is(formatMoney(100000, 'IQD'), 'IQD 100.000');
  t.is(CURRENCY_EXPONENTS.IQD, 3);
  // A well-formed code ISO 4217 does not list: two decimals.
  t.is(formatMoney(2000, 'XYZ'), 'XYZ 20.00');
});

test('formatMoney: what cannot be read as money is shown as given, marked as minor units', (t) => {
  t.is(formatMoney(2000, 'eur'), '2000 eur (minor units)');
  t.is(formatMoney(2000, 'EURO'), '2000 EURO (minor units)');
  t.is(formatMoney(12.5, 'EUR'), '12.5 EUR (minor units)');
  t.is(formatMoney(Number.NaN, 'EUR'), 'NaN EUR (minor units)');
});

test("formatMicroDollars: the model gateway's micro-dollars in dollars, cents always", (t) => {
  t.is(formatMicroDollars(5_000_000), 'USD 5.00');
  t.is(formatMicroDollars(300), 'USD 0.0003');
  t.is(formatMicroDollars(1_234_567_891), 'USD 1,234.567891');
});

test('the chat card and the receipt text show the amount in the same style, in every currency', (t) => {
  for (const [currency, shown, signed] of [
    ['EUR', 'EUR 25.00', 'EUR 25.00 (2500 minor units)'],
    ['JPY', 'JPY 2,500', 'JPY 2,500 (2500 minor units)'],
    ['KWD', 'KWD 2.500', 'KWD 2.500 (2500 minor units)'],
    // A receipt from elsewhere may carry a code that is not one: shown as given.
    ['eur', '2500 eur (minor units)', '2500 eur (minor units)'],
  ] as const) {
    const card = {
      approval: {
        summary: 'Pay Acme',
        type: 'payment',
        agent: { id: 'agt_1', name: 'billing-bot' },
        expiresAt: '2026-11-30T00:00:00.000Z',
        whoMayDecide: 'Owners and admins.',
        payment: { amount: 2500, currency, merchant: 'acme.example' },
      },
    };
    const blocks = cardBlocks(card, []) as Array<{ fields?: Array<{ text: string }> }>;
    t.true(
      blocks[1]!.fields!.some((f) => f.text === `Amount: ${shown}`),
      JSON.stringify(blocks[1]),
    );
    const lines = describeVerdict({
      valid: true,
      kid: 'k1',
      reason: null,
      replayed: false,
      claims: {
        sub: 'agt_1',
        act: 'act_1',
        typ: 'payment',
        amt: 2500,
        cur: currency,
        mer: 'acme.example',
        hum: false,
        iss: 'svc',
        iat: 1_800_000_000,
        exp: 1_900_000_000,
        jti: 'act_1',
      },
    });
    t.true(lines.includes(`  amount                ${signed}`), lines.join('\n'));
  }
});
