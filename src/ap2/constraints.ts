import Joi from 'joi';
import { AppError } from '../errors/app-error.js';
import type { MandateRule, RecurrenceFrequency, RuleSource } from '../mandates/records.js';
import { RECURRENCE_FREQUENCIES } from '../mandates/schemas.js';

/**
 * An open Payment Mandate's constraints as svc mandate rules (docs/ap2.md#mapping-ap2-constraints-to-rules).
 * One rule per mandate, for actions of type `payment`:
 * - `payment.amount_range` (`currency`, `max`, `min`; minor units): `currencies`, `maxAmount`,
 *   `minAmount` (a `min` of 0 sets none).
 * - `payment.budget` (`max`, `currency`): `budget` (a total over the credential's life), in the
 *   same currency as the amount range.
 * - `payment.agent_recurrence` (`frequency`, `max_occurrences`): `recurrence`.
 * - `payment.allowed_payees` (disclosed `Merchant`s): `merchants`, each payee's `website` host;
 *   absent, any merchant.
 * - `payment.execution_date` (`not_before`, `not_after`): `executionDate`.
 * - `payment.allowed_payment_instruments`, `payment.allowed_pisps`: checked against a presented
 *   closed mandate only, so the rule then needs one (`source.presentationRequired`).
 * - `payment.reference`: kept with the import; it binds the payment to a checkout mandate, which
 *   the merchant verifies.
 * - A `payment_amount` or `payee` the open mandate sets itself narrows the rule the same way.
 * Anything else (an unknown type, a second constraint of one type, a payee without a website, a
 * budget in another currency, no currency at all): 422 unresolved_constraint, naming it.
 */

const CURRENCY = Joi.string().pattern(/^[A-Z]{3}$/);
const MINOR = Joi.number().strict().integer().min(0).max(Number.MAX_SAFE_INTEGER);
const merchant = Joi.object({ id: Joi.string(), name: Joi.string(), website: Joi.string() }).unknown(true);

const SCHEMAS: Record<string, Joi.ObjectSchema> = {
  'payment.amount_range': Joi.object({ currency: CURRENCY.required(), max: MINOR.min(1).required(), min: MINOR }),
  'payment.budget': Joi.object({ currency: CURRENCY.required(), max: MINOR.min(1).required() }),
  'payment.agent_recurrence': Joi.object({
    frequency: Joi.string()
      .valid(...RECURRENCE_FREQUENCIES)
      .required(),
    max_occurrences: Joi.number().strict().integer().min(1).max(1_000_000),
  }),
  'payment.allowed_payees': Joi.object({ allowed: Joi.array().items(merchant).required() }),
  'payment.execution_date': Joi.object({ not_before: Joi.string().isoDate(), not_after: Joi.string().isoDate() }),
  'payment.allowed_payment_instruments': Joi.object({
    allowed: Joi.array().items(Joi.object().unknown(true)).required(),
  }),
  'payment.allowed_pisps': Joi.object({ allowed: Joi.array().items(Joi.object().unknown(true)).required() }),
  'payment.reference': Joi.object({ conditional_transaction_id: Joi.string().min(1).max(512).required() }),
};

/** The constraint types svc reads (docs/ap2.md#mapping-ap2-constraints-to-rules). */
export const CONSTRAINT_TYPES = Object.keys(SCHEMAS);

const unresolved = (field: string, message: string): AppError =>
  new AppError('unresolved_constraint', { details: { errors: [{ field, message }] } });

type Constraint = Record<string, unknown> & { type: string };

/** The host of a merchant's `website`, lower-cased: svc names merchants by domain. */
export function payeeHost(payee: unknown, field: string): string {
  const website = typeof payee === 'object' && payee !== null ? (payee as { website?: unknown }).website : undefined;
  if (typeof website !== 'string')
    throw unresolved(field, `${field} has no website: svc names a merchant by its domain`);
  try {
    const host = new URL(website).hostname.toLowerCase();
    if (host) return host;
  } catch {
    // fall through
  }
  throw unresolved(field, `${field}.website ${JSON.stringify(website)} is not a URL`);
}

/** Each constraint checked against its type's shape; types svc does not know are refused. */
export function readConstraints(content: Record<string, unknown>, field: string): Map<string, Constraint> {
  const list = content.constraints;
  if (list === undefined) return new Map();
  if (!Array.isArray(list) || list.length > 50)
    throw unresolved(field, `${field} must be a list of at most 50 constraints`);
  const out = new Map<string, Constraint>();
  list.forEach((c: unknown, i) => {
    const at = `${field}[${i}]`;
    const type = typeof c === 'object' && c !== null ? (c as { type?: unknown }).type : undefined;
    if (typeof type !== 'string') throw unresolved(at, `${at} has no type`);
    const schema = SCHEMAS[type];
    if (!schema)
      throw unresolved(
        at,
        `${at}: svc does not know the constraint ${JSON.stringify(type).slice(0, 80)}, so it cannot hold it`,
      );
    if (out.has(type)) throw unresolved(at, `${at} repeats ${type}`);
    const { type: _t, ...rest } = c as Constraint;
    const { error } = schema.validate(rest, { allowUnknown: false, abortEarly: true });
    if (error) throw unresolved(at, `${at} (${type}): ${error.message.replace(/"/g, '')}`);
    out.set(type, c as Constraint);
  });
  return out;
}

/** The merchants a rule allows: the disclosed payees' hosts, the open mandate's own payee, or any. */
function merchantsOf(constraints: Map<string, Constraint>, content: Record<string, unknown>, field: string): string[] {
  const hosts = new Set<string>();
  const allowed = constraints.get('payment.allowed_payees')?.allowed as unknown[] | undefined;
  if (allowed !== undefined) {
    if (allowed.length === 0) throw unresolved(`${field}.allowed_payees`, 'payment.allowed_payees discloses no payee');
    allowed.forEach((p, i) => hosts.add(payeeHost(p, `${field}.allowed_payees.allowed[${i}]`)));
  }
  if (content.payee !== undefined) {
    const own = payeeHost(content.payee, 'payee');
    if (allowed !== undefined && !hosts.has(own))
      throw unresolved('payee', `payee ${own} is not among its allowed payees`);
    return [own];
  }
  return hosts.size > 0 ? [...hosts] : ['*'];
}

/** The rule an open Payment Mandate's content stands for, with its source. */
export function ruleOf(
  content: Record<string, unknown>,
  source: RuleSource,
  field = 'constraints',
): Omit<MandateRule, 'id'> {
  const constraints = readConstraints(content, field);
  const range = constraints.get('payment.amount_range') as { currency: string; max: number; min?: number } | undefined;
  const budget = constraints.get('payment.budget') as { currency: string; max: number } | undefined;
  const preset = content.payment_amount as { amount?: unknown; currency?: unknown } | undefined;
  const currency =
    range?.currency ?? budget?.currency ?? (typeof preset?.currency === 'string' ? preset.currency : undefined);
  if (currency === undefined || !/^[A-Z]{3}$/.test(currency))
    throw unresolved(field, 'no payment.amount_range, payment.budget or payment_amount names the currency to allow');
  if (budget && budget.currency !== currency)
    throw unresolved(`${field}.budget`, `payment.budget is in ${budget.currency}, the amount range in ${currency}`);
  const rule: Omit<MandateRule, 'id'> = {
    actions: ['payment'],
    merchants: merchantsOf(constraints, content, field),
    currencies: [currency],
    source: { ...source },
  };
  if (range) rule.maxAmount = range.max;
  if (range?.min) rule.minAmount = range.min;
  if (preset !== undefined) {
    if (!Number.isSafeInteger(preset.amount) || (preset.amount as number) < 1 || preset.currency !== currency)
      throw unresolved(
        'payment_amount',
        'payment_amount must be a whole number of minor units in the mandate currency',
      );
    rule.maxAmount = Math.min(rule.maxAmount ?? Number.MAX_SAFE_INTEGER, preset.amount as number);
    rule.minAmount = preset.amount as number;
  }
  if (budget) rule.budget = { amount: budget.max };
  const recurrence = constraints.get('payment.agent_recurrence') as
    { frequency: RecurrenceFrequency; max_occurrences?: number } | undefined;
  if (recurrence)
    rule.recurrence = {
      frequency: recurrence.frequency,
      ...(recurrence.max_occurrences !== undefined ? { maxOccurrences: recurrence.max_occurrences } : {}),
    };
  const dates = constraints.get('payment.execution_date') as { not_before?: string; not_after?: string } | undefined;
  if (dates?.not_before || dates?.not_after)
    rule.executionDate = {
      ...(dates.not_before ? { notBefore: dates.not_before } : {}),
      ...(dates.not_after ? { notAfter: dates.not_after } : {}),
    };
  if (constraints.has('payment.allowed_payment_instruments') || constraints.has('payment.allowed_pisps'))
    rule.source = { ...rule.source!, presentationRequired: true };
  return rule;
}
