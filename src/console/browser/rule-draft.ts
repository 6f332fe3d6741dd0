import { currencyExponent, formatMoney } from '../../lib/money.js';
import type { MandateRule } from './text.js';

/**
 * The template editor's rule, as a person types it, and back: amounts typed in the currency's
 * units ("50", "50.00", "1,250.5") become whole minor units with ISO 4217's exponent (the
 * product's own table, src/lib/money.ts: EUR 2 decimals, JPY none, KWD three), and a rule reads
 * as one plain sentence whose amounts come from the same formatter the gate's reasons use
 * (formatMoney). No DOM here, so the tests run it as the page does.
 */

/** The editor's fields, as typed. Lists are separated by commas, spaces or new lines. */
export interface RuleDraft {
  actions: string;
  merchants: string;
  domains: string;
  currency: string;
  maxAmount: string;
  approvalAbove: string;
  periodAmount: string;
  period: string;
}

export const EMPTY_DRAFT: RuleDraft = {
  actions: 'payment',
  merchants: '',
  domains: '',
  currency: 'EUR',
  maxAmount: '',
  approvalAbove: '',
  periodAmount: '',
  period: 'week',
};

/** One problem with a field, said as a sentence a person can act on. */
export interface DraftProblem {
  field: keyof RuleDraft;
  message: string;
}

const MAX = BigInt(Number.MAX_SAFE_INTEGER);
/** A merchant or domain name as the API takes it: a domain name, or `*.` and one (its subdomains). */
const NAME = /^(\*\.)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * An amount typed in the currency's units as whole minor units, or a sentence saying what is
 * wrong with it. Accepts "50", "50.5", "50.50", "1,250.00" (commas grouping thousands); refuses
 * more decimals than the currency has, signs, and anything else.
 */
export function unitsToMinor(typed: string, currency: string): { minor: number } | { problem: string } {
  const text = typed.trim().replace(/[\s\u00a0]/g, '');
  const digits = currencyExponent(currency);
  const grouped = /^\d{1,3}(,\d{3})+(\.\d*)?$/.test(text);
  const plain = /^\d+(\.\d*)?$/.test(text) || /^\.\d+$/.test(text);
  if (!text || !(grouped || plain)) {
    return {
      problem: `Write the amount in ${currency} as a number, such as ${example(currency)}.`,
    };
  }
  const [whole = '', fraction = ''] = text.replace(/,/g, '').split('.');
  if (fraction.length > digits) {
    return {
      problem:
        digits === 0
          ? `${currency} has no decimals: write a whole amount, such as ${example(currency)}.`
          : `${currency} has ${digits} decimal${digits === 1 ? '' : 's'}: write at most ${digits} after the point.`,
    };
  }
  const minor = BigInt(whole || '0') * 10n ** BigInt(digits) + BigInt((fraction || '').padEnd(digits, '0') || '0');
  if (minor > MAX) return { problem: `The amount is larger than svc can count.` };
  return { minor: Number(minor) };
}

/** Whole minor units as the editor shows them for typing: "50.00" for 5000 EUR, "2000" for 2000 JPY. */
export function minorToUnits(minor: number, currency: string): string {
  const digits = currencyExponent(currency);
  const text = String(minor).padStart(digits + 1, '0');
  return digits === 0 ? text : `${text.slice(0, -digits)}.${text.slice(-digits)}`;
}

function example(currency: string): string {
  const digits = currencyExponent(currency);
  return digits === 0 ? '50' : `50.${'0'.repeat(digits)}`;
}

/** A typed list: its names, trimmed, without empties or repeats. */
export function listOf(typed: string): string[] {
  const out: string[] = [];
  for (const part of typed.split(/[\s,;]+/)) {
    const name = part.trim();
    if (name && !out.includes(name)) out.push(name);
  }
  return out;
}

/**
 * The editor's fields as a rule the API takes (its machine fields in minor units), or the
 * problems to show beside the fields. The API checks the rule again; this only spares a person
 * a round trip for what the page can see.
 */
export function ruleOfDraft(draft: RuleDraft): { rule: MandateRule } | { problems: DraftProblem[] } {
  const problems: DraftProblem[] = [];
  const rule: MandateRule = {};
  const actions = listOf(draft.actions);
  if (!actions.length) problems.push({ field: 'actions', message: 'Name at least one action, such as payment.' });
  rule.actions = actions;
  const names = (field: 'merchants' | 'domains', what: string, example: string): string[] | undefined => {
    const list = listOf(draft[field].toLowerCase());
    if (!list.length) return undefined;
    if (list.includes('*')) return ['*'];
    const bad = list.find((n) => !NAME.test(n));
    if (bad !== undefined) {
      problems.push({ field, message: `“${bad}” is not a ${what} name: write names such as ${example}, or *.` });
    }
    return list;
  };
  const merchants = names('merchants', 'merchant', 'acme.example');
  if (merchants) rule.merchants = merchants;
  const domains = names('domains', 'domain', 'docs.example or *.example.com');
  if (domains) rule.domains = domains;
  const currency = draft.currency.trim().toUpperCase();
  const amounts = [draft.maxAmount, draft.approvalAbove, draft.periodAmount].some((a) => a.trim() !== '');
  if (currency) {
    if (!/^[A-Z]{3}$/.test(currency)) {
      problems.push({ field: 'currency', message: 'A currency is three letters, such as EUR, USD or JPY.' });
    } else rule.currencies = [currency];
  } else if (amounts) {
    problems.push({ field: 'currency', message: 'Name the currency the amounts are in.' });
  }
  const amount = (field: 'maxAmount' | 'approvalAbove' | 'periodAmount', least: number): number | undefined => {
    const typed = draft[field];
    if (!typed.trim() || !rule.currencies) return undefined;
    const parsed = unitsToMinor(typed, currency);
    if ('problem' in parsed) {
      problems.push({ field, message: parsed.problem });
      return undefined;
    }
    if (parsed.minor < least) {
      problems.push({ field, message: 'The amount must be more than nothing.' });
      return undefined;
    }
    return parsed.minor;
  };
  const maxAmount = amount('maxAmount', 1);
  if (maxAmount !== undefined) rule.maxAmount = maxAmount;
  const above = amount('approvalAbove', 0);
  if (above !== undefined) {
    if (maxAmount !== undefined && above >= maxAmount) {
      problems.push({
        field: 'approvalAbove',
        message: 'The approval line must be below the largest amount, or no payment would ever wait for a person.',
      });
    } else rule.approval = { above };
  }
  const period = amount('periodAmount', 1);
  if (period !== undefined) {
    if (!['day', 'week', 'month'].includes(draft.period)) {
      problems.push({ field: 'period', message: 'Choose a day, a week or a month.' });
    } else rule.periodLimit = { amount: period, period: draft.period };
  }
  return problems.length ? { problems } : { rule };
}

/** A rule the API gave back as the editor's fields (its first currency). */
export function draftOfRule(rule: MandateRule): RuleDraft {
  const currency = rule.currencies?.[0] ?? '';
  const units = (minor: number | undefined) => (minor === undefined || !currency ? '' : minorToUnits(minor, currency));
  return {
    actions: (rule.actions ?? []).join(', '),
    merchants: (rule.merchants ?? []).join(', '),
    domains: (rule.domains ?? []).join(', '),
    currency,
    maxAmount: units(rule.maxAmount),
    approvalAbove: units(rule.approval?.above),
    periodAmount: units(rule.periodLimit?.amount),
    period: rule.periodLimit?.period ?? 'week',
  };
}

const NOUNS: Record<string, string> = {
  payment: 'payments',
  refund: 'refunds',
  transfer: 'transfers',
  purchase: 'purchases',
  email: 'emails',
  message: 'messages',
  browse: 'browsing',
  download: 'downloads',
  deploy: 'deploys',
  delete: 'deletions',
};

function joined(names: string[]): string {
  if (names.length <= 1) return names.join('');
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** An amount in each of the rule's currencies ("EUR 50.00 or USD 50.00"). */
function amountIn(minor: number, currencies: string[]): string {
  return currencies.map((c) => formatMoney(minor, c)).join(' or ');
}

/**
 * What a rule allows, as one plain paragraph, in the gate's own terms: a rule without merchants
 * (or domains) covers only actions that name none, one without currencies only actions without
 * an amount; an amount above the approval line waits for people.
 * "Payments up to EUR 50.00 each to merchants a.com and b.com; a person approves above EUR 20.00;
 * at most EUR 200.00 a week."
 */
export function rulePreview(rule: MandateRule): string {
  const actions = rule.actions ?? [];
  const what = actions.includes('*')
    ? 'any action'
    : joined(actions.map((a) => NOUNS[a] ?? (a.endsWith('.*') ? `${a.slice(0, -2)}.* actions` : `${a} actions`)));
  const currencies = rule.currencies ?? [];
  const parts: string[] = [];
  let first = capital(what);
  if (typeof rule.maxAmount === 'number' && currencies.length)
    first += ` up to ${amountIn(rule.maxAmount, currencies)} each`;
  else if (currencies.length) first += ` of any amount in ${joined(currencies)}`;
  else first += ' that carry no amount';
  if (rule.merchants) {
    first += rule.merchants.includes('*')
      ? ' to any merchant'
      : ` to ${rule.merchants.length === 1 ? 'merchant' : 'merchants'} ${joined(rule.merchants)}`;
  }
  if (rule.domains) {
    first += rule.domains.includes('*')
      ? ' on any domain'
      : ` on ${rule.domains.length === 1 ? 'domain' : 'domains'} ${joined(rule.domains)}`;
  }
  if (!rule.merchants && !rule.domains)
    first += currencies.length ? ' that name no merchant or domain' : ' and name no merchant or domain';
  parts.push(first);
  if (rule.approval) {
    const who = rule.approval.count === 2 ? 'two people approve' : 'a person approves';
    const named = rule.approval.approvers?.length ? ' (named approvers)' : '';
    parts.push(
      rule.approval.above === 0 || !currencies.length
        ? `${who} each one${named}`
        : `${who} above ${amountIn(rule.approval.above, currencies)}${named}`,
    );
    if (rule.approval.separationOfDuties) parts.push('not the person the agent acts for');
  }
  if (rule.periodLimit && currencies.length) {
    parts.push(`at most ${amountIn(rule.periodLimit.amount, currencies)} a ${rule.periodLimit.period}`);
  }
  return `${parts.join('; ')}.`;
}
