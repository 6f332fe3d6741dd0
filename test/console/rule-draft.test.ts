import test from 'ava';
import fc from 'fast-check';
import { plainMessage } from '../../src/console/browser/plain-errors.js';
import {
  EMPTY_DRAFT,
  draftOfRule,
  minorToUnits,
  ruleOfDraft,
  rulePreview,
  unitsToMinor,
} from '../../src/console/browser/rule-draft.js';
import { currencyExponent, formatMoney } from '../../src/lib/money.js';
import { ruleSchema } from '../../src/mandates/schemas.js';

/**
 * The console's template editor (src/console/browser/rule-draft.ts, bundled into the page
 * script): amounts typed in a currency's units become whole minor units with ISO 4217's
 * exponent (JPY 0, EUR 2, KWD 3), every rule it makes is one the API takes, and its preview
 * writes amounts with the gate's formatter. And the console's plain sentences for the API's
 * field messages (src/console/browser/plain-errors.ts).
 */

const currency = fc.constantFrom('EUR', 'JPY', 'KWD', 'USD', 'CLF', 'HUF', 'IQD', 'XAU', 'GBP');

test('an amount typed in units is the minor units of its currency, and back, for any amount', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), currency, (minor, code) => {
      const typed = minorToUnits(minor, code);
      const parsed = unitsToMinor(typed, code);
      return 'minor' in parsed && parsed.minor === minor;
    }),
  );
  t.deepEqual(unitsToMinor('50', 'EUR'), { minor: 5000 });
  t.deepEqual(unitsToMinor('50.5', 'EUR'), { minor: 5050 });
  t.deepEqual(unitsToMinor('1,250.00', 'EUR'), { minor: 125000 });
  t.deepEqual(unitsToMinor('2000', 'JPY'), { minor: 2000 });
  t.deepEqual(unitsToMinor('2.5', 'KWD'), { minor: 2500 });
  t.deepEqual(unitsToMinor(' 7 ', 'USD'), { minor: 700 });
});

test('an amount that is not one is refused with a sentence that says why', (t) => {
  t.deepEqual(unitsToMinor('20.001', 'EUR'), { problem: 'EUR has 2 decimals: write at most 2 after the point.' });
  t.deepEqual(unitsToMinor('20.5', 'JPY'), { problem: 'JPY has no decimals: write a whole amount, such as 50.' });
  for (const bad of ['', 'abc', '-5', '5e3', '1,25', '1.2.3', '99999999999999999999'])
    t.true('problem' in unitsToMinor(bad, 'EUR'), bad);
  fc.assert(
    fc.property(fc.string(), currency, (typed, code) => {
      const parsed = unitsToMinor(typed, code);
      return 'problem' in parsed ? parsed.problem.length > 0 : Number.isSafeInteger(parsed.minor) && parsed.minor >= 0;
    }),
  );
});

test('every rule the editor makes passes the API’s rule check, amounts in minor units', (t) => {
  const typedAmount = fc.oneof(fc.constant(''), fc.integer({ min: 0, max: 1_000_000 }).map(String));
  const draft = fc.record({
    actions: fc.constantFrom('payment', 'payment, refund', '*', 'crm.update', ''),
    merchants: fc.constantFrom('', 'acme.example', 'a.com, b.com', '*', 'Not A Name!'),
    domains: fc.constantFrom('', 'docs.example', '*.example.com'),
    currency: fc.constantFrom('EUR', 'JPY', 'KWD', '', 'eu'),
    maxAmount: typedAmount,
    approvalAbove: typedAmount,
    periodAmount: typedAmount,
    period: fc.constantFrom('day', 'week', 'month'),
  });
  let made = 0;
  fc.assert(
    fc.property(draft, (d) => {
      const result = ruleOfDraft(d);
      if ('problems' in result) return result.problems.every((p) => p.message.endsWith('.'));
      made += 1;
      const { error } = ruleSchema.validate(result.rule);
      return error === undefined && rulePreview(result.rule).endsWith('.');
    }),
  );
  t.true(made > 0);
  const result = ruleOfDraft({
    ...EMPTY_DRAFT,
    merchants: 'a.com, B.com',
    currency: 'kwd',
    maxAmount: '50',
    approvalAbove: '20.5',
    periodAmount: '200',
    period: 'month',
  });
  t.deepEqual(result, {
    rule: {
      actions: ['payment'],
      merchants: ['a.com', 'b.com'],
      currencies: ['KWD'],
      maxAmount: 50000,
      approval: { above: 20500 },
      periodLimit: { amount: 200000, period: 'month' },
    },
  });
  if ('rule' in result) t.deepEqual(ruleOfDraft(draftOfRule(result.rule)), result);
});

test('the editor names what is wrong beside the field', (t) => {
  t.deepEqual(ruleOfDraft({ ...EMPTY_DRAFT, actions: ' ' }), {
    problems: [{ field: 'actions', message: 'Name at least one action, such as payment.' }],
  });
  t.deepEqual(ruleOfDraft({ ...EMPTY_DRAFT, currency: '', maxAmount: '5' }), {
    problems: [{ field: 'currency', message: 'Name the currency the amounts are in.' }],
  });
  t.deepEqual(ruleOfDraft({ ...EMPTY_DRAFT, merchants: 'acme.example, shop!' }), {
    problems: [
      { field: 'merchants', message: '“shop!” is not a merchant name: write names such as acme.example, or *.' },
    ],
  });
  const above = ruleOfDraft({ ...EMPTY_DRAFT, maxAmount: '20', approvalAbove: '20' });
  t.is('problems' in above && above.problems[0]!.field, 'approvalAbove');
});

test('the preview reads the rule in words, with the gate’s money format', (t) => {
  t.is(
    rulePreview({
      actions: ['payment'],
      merchants: ['a.com', 'b.com'],
      currencies: ['EUR'],
      maxAmount: 5000,
      approval: { above: 2000 },
      periodLimit: { amount: 20000, period: 'week' },
    }),
    'Payments up to EUR 50.00 each to merchants a.com and b.com; a person approves above EUR 20.00; at most EUR 200.00 a week.',
  );
  t.is(
    rulePreview({
      actions: ['payment', 'refund'],
      merchants: ['*'],
      currencies: ['JPY'],
      approval: { above: 0, count: 2 },
    }),
    'Payments and refunds of any amount in JPY to any merchant; two people approve each one.',
  );
  t.is(rulePreview({ actions: ['email'] }), 'Emails that carry no amount and name no merchant or domain.');
  fc.assert(
    fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), currency, (max, code) =>
      rulePreview({ actions: ['payment'], merchants: ['*'], currencies: [code], maxAmount: max }).includes(
        formatMoney(max, code),
      ),
    ),
  );
  t.is(currencyExponent('KWD'), 3);
});

test("the API's field messages read as plain sentences", (t) => {
  t.is(
    plainMessage('"newPassword" length must be at least 12 characters long'),
    'The new password must be at least 12 characters long.',
  );
  t.is(
    plainMessage('"rules[0].merchants[0]" must be a merchant name or "*"; "name" is not allowed to be empty'),
    'The merchants (rule 1) must be a merchant name or "*". The name is empty: fill it in.',
  );
  t.is(plainMessage('The current password is wrong.'), 'The current password is wrong.');
  t.is(plainMessage('no such key'), 'No such key.');
  fc.assert(fc.property(fc.string(), (m) => typeof plainMessage(m) === 'string'));
});
