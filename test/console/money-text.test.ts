import test from 'ava';
import fc from 'fast-check';
import { money, ruleText } from '../../src/console/browser/text.js';
import { formatMoney } from '../../src/lib/money.js';

/**
 * The console writes money as the server's texts do (issue 37: the approvals page showed "above
 * €2,000.00" beside a reason saying "above 200000 EUR"): its browser code (src/console/browser/text.ts,
 * bundled into the page script) formats every amount exactly as src/lib/money.ts does, and a rule's limits in each of
 * its currencies.
 */
const page = { money, ruleText };

test("the console's money is the server's formatMoney, for any amount and currency", (t) => {
  const currency = fc.oneof(
    fc.constantFrom('EUR', 'JPY', 'KWD', 'USD', 'CLF', 'HUF', 'IQD', 'XAU'),
    fc.stringMatching(/^[A-Z]{3}$/),
  );
  const amount = fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });
  fc.assert(fc.property(amount, currency, (a, c) => page.money({ amount: a, currency: c }) === formatMoney(a, c)));
  t.is(page.money({ amount: 2500, currency: 'KWD' }), 'KWD 2.500');
  t.is(page.money(null), null);
});

test("a rule's line shows each limit in the currency's units, in each of the rule's currencies", (t) => {
  t.is(
    page.ruleText({
      actions: ['payment'],
      merchants: ['acme.example'],
      currencies: ['EUR', 'JPY'],
      maxAmount: 5000,
      periodLimit: { amount: 8000, period: 'day' },
      approval: { above: 2000 },
    }),
    'payment · at acme.example · in EUR, JPY · up to EUR 50.00 or JPY 5,000 each · ' +
      'EUR 80.00 or JPY 8,000 a day · a person approves above EUR 20.00 or JPY 2,000',
  );
  t.is(
    page.ruleText({ actions: ['payment'], merchants: ['*'], currencies: ['KWD'], maxAmount: 1500 }),
    'payment · any merchant · up to KWD 1.500 each',
  );
});

test('a rule imported from an AP2 mandate shows its least amount, budget, recurrence, dates and source', (t) => {
  t.is(
    page.ruleText({
      actions: ['payment'],
      merchants: ['acme.example'],
      currencies: ['USD'],
      maxAmount: 10_000,
      minAmount: 500,
      budget: { amount: 20_000 },
      recurrence: { frequency: 'MONTHLY', maxOccurrences: 12 },
      executionDate: { notAfter: '2026-12-31T23:59:59Z' },
      source: {
        kind: 'ap2',
        mandateId: 'ap2_0000000000000000000000',
        credentialHash: 'AEyhwWFxP8-SL-ULmtdAQzkcqSo2YA5Rj7wnPZXTC7g',
        issuer: 'https://wallet.example',
      },
    }),
    'payment · at acme.example · up to USD 100.00 each · at least USD 5.00 · USD 200.00 in all · ' +
      'once monthly, 12 times at most · until 2026-12-31T23:59:59Z · ' +
      'from AP2 mandate ap2_0000000000000000000000 by https://wallet.example (credential AEyhwWFxP8-S…)',
  );
});
