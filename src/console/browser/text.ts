import { CURRENCY_EXPONENTS } from '../../lib/money.js';

/**
 * Text a person reads, made from the API's data with no page around it (so the tests run it as
 * the page does): money as the server writes it (src/lib/money.ts: "EUR 20.00", with ISO 4217's
 * decimals), dollars of the model gateway, counts and times, mandate rules and ledger actors.
 */

/** A mandate rule as the API gives it (the fields its line names). */
export interface MandateRule {
  actions?: string[];
  merchants?: string[];
  domains?: string[];
  currencies?: string[];
  maxAmount?: number;
  periodLimit?: { amount: number; period: string };
  approval?: { above: number; count?: number; approvers?: string[]; separationOfDuties?: boolean };
  minAmount?: number;
  budget?: { amount: number };
  recurrence?: { frequency: string; maxOccurrences?: number };
  executionDate?: { notBefore?: string; notAfter?: string };
  source?: { kind: string; mandateId: string; credentialHash: string; issuer: string; expiresAt?: string };
}

// ---- formatting ---------------------------------------------------------------------------

// Minor units as the server's texts write them: the code, then the exact digits (no division).
export function money(payment: { amount?: unknown; currency?: string } | null | undefined): string | null {
  if (!payment || typeof payment.amount !== 'number') return null;
  const code = payment.currency;
  if (!Number.isSafeInteger(payment.amount) || !/^[A-Z]{3}$/.test(code || ''))
    return payment.amount + ' ' + (code || '') + ' (minor units)';
  const digits =
    code !== undefined && Object.prototype.hasOwnProperty.call(CURRENCY_EXPONENTS, code)
      ? (CURRENCY_EXPONENTS[code] ?? 2)
      : 2;
  const figures = String(Math.abs(payment.amount)).padStart(digits + 1, '0');
  const exact =
    (payment.amount < 0 ? '-' : '') + (digits ? figures.slice(0, -digits) + '.' + figures.slice(-digits) : figures);
  const format = new Intl.NumberFormat('en', {
    style: 'currency',
    currency: code,
    currencyDisplay: 'code',
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
  return format.format(exact as Intl.StringNumericLiteral).replace(/\u00a0/g, ' ');
}

/** Micro-dollars as dollars: cents when at least a cent, else to the micro-dollar. */
export function usd(micros: number) {
  const digits = micros === 0 || Math.abs(micros) >= 10000 ? 2 : 6;
  return new Intl.NumberFormat('en-US', {
    style: 'currency',
    currency: 'USD',
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  }).format(micros / 1e6);
}

export function count(n: number) {
  return new Intl.NumberFormat('en-US').format(n);
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
export function ago(iso: string): string {
  const at = Date.parse(iso);
  if (isNaN(at)) return '';
  const seconds = Math.round((at - Date.now()) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return 'just now';
  if (abs < 3600) return relative.format(Math.round(seconds / 60), 'minute');
  if (abs < 86400) return relative.format(Math.round(seconds / 3600), 'hour');
  return relative.format(Math.round(seconds / 86400), 'day');
}

export function clock(date: Date): string {
  return date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** A rule's limit in each of its currencies (a limit counts minor units of the action's currency). */
export function amountText(amount: number, currencies: string[] | undefined): string {
  if (!currencies || !currencies.length) return String(amount);
  return currencies
    .map(function (currency) {
      return money({ amount: amount, currency: currency });
    })
    .join(' or ');
}

/** A mandate rule as one line a person reads (what, where, how much, when a person decides). */
export function ruleText(rule: MandateRule | null | undefined): string {
  if (!rule) return '';
  const parts: string[] = [];
  const actions = rule.actions || [];
  parts.push(actions.indexOf('*') !== -1 ? 'any action' : actions.join(', '));
  if (rule.merchants)
    parts.push(rule.merchants.indexOf('*') !== -1 ? 'any merchant' : 'at ' + rule.merchants.join(', '));
  if (rule.domains) parts.push(rule.domains.indexOf('*') !== -1 ? 'any domain' : 'on ' + rule.domains.join(', '));
  const currency = rule.currencies && rule.currencies.length === 1 ? rule.currencies[0] : null;
  if (rule.currencies && !currency) parts.push('in ' + rule.currencies.join(', '));
  if (typeof rule.maxAmount === 'number') parts.push('up to ' + amountText(rule.maxAmount, rule.currencies) + ' each');
  else if (currency) parts.push('in ' + currency);
  if (rule.periodLimit)
    parts.push(amountText(rule.periodLimit.amount, rule.currencies) + ' a ' + rule.periodLimit.period);
  if (typeof rule.minAmount === 'number') parts.push('at least ' + amountText(rule.minAmount, rule.currencies));
  if (rule.budget) parts.push(amountText(rule.budget.amount, rule.currencies) + ' in all');
  if (rule.recurrence) {
    const once =
      rule.recurrence.frequency === 'ON_DEMAND' ? 'any time' : 'once ' + rule.recurrence.frequency.toLowerCase();
    const max = rule.recurrence.maxOccurrences;
    parts.push(once + (typeof max === 'number' ? ', ' + max + ' times at most' : ''));
  }
  if (rule.executionDate) {
    const { notBefore, notAfter } = rule.executionDate;
    parts.push([notBefore ? 'from ' + notBefore : '', notAfter ? 'until ' + notAfter : ''].filter(Boolean).join(' '));
  }
  if (rule.approval) {
    const above = amountText(rule.approval.above, rule.currencies);
    let asks = 'a person approves above ' + above;
    if (rule.approval.count === 2) asks = 'two people approve above ' + above;
    if (rule.approval.approvers && rule.approval.approvers.length) asks += ' (named approvers)';
    if (rule.approval.separationOfDuties) asks += ', not the person it acts for';
    parts.push(asks);
  }
  if (rule.source)
    parts.push(
      'from AP2 mandate ' +
        rule.source.mandateId +
        ' by ' +
        rule.source.issuer +
        ' (credential ' +
        rule.source.credentialHash.slice(0, 12) +
        '…' +
        (rule.source.expiresAt ? ', expires ' + rule.source.expiresAt : '') +
        ')',
    );
  return parts.join(' · ');
}

/**
 * The name of a ledger actor or subject (user:usr_…, agent:agt_…, or a bare id) among the names
 * known (by id), or null when none is known.
 */
export function entityName(raw: string, names: Record<string, string>): string | null {
  const id = /^(?:user|agent):/.test(raw) ? raw.slice(raw.indexOf(':') + 1) : raw;
  return Object.prototype.hasOwnProperty.call(names, id) && names[id] ? (names[id] ?? null) : null;
}

/** A ledger actor (user:usr_…, token:name, a bare user id) as a person reads it. */
export function actorName(by: unknown, me: string, people?: Record<string, string>): string {
  if (!by) return 'someone';
  const text = String(by);
  const id = text.indexOf('user:') === 0 ? text.slice(5) : text;
  if (id === me) return 'you';
  const name = people && people[id];
  if (name) return name;
  if (text.indexOf('token:') === 0) return 'service token ' + text.slice(6);
  return text;
}
