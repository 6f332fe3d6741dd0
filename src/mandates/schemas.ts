import Joi from 'joi';
import type { MandateRule } from './records.js';

/**
 * Mandate rules and the action types the gate judges (docs/gate.md#the-gate).
 * Rules:
 * - `actions` names built-in single-word types, dotted custom types (`crm.update`), a dotted
 *   prefix wildcard (`crm.*`), or `*`.
 * - `merchants` and `domains` are lists of names, or exactly `["*"]` (anywhere); a domain may be
 *   `*.example.com` (that domain's subdomains). Matching ignores case.
 * - Amounts are positive whole minor units; currencies three upper-case letters.
 * - `approval.count` is 1 or 2; named approvers are person ids.
 * - `minAmount`, `budget`, `recurrence` and `executionDate` (docs/ap2.md#mapping-ap2-constraints-to-rules)
 *   are what imported AP2 constraints become; a person may set them too.
 */
export const BUILT_IN_TYPES = [
  'payment',
  'refund',
  'transfer',
  'purchase',
  'email',
  'message',
  'browse',
  'download',
  'deploy',
  'delete',
] as const;

/** How often a rule with `recurrence` may be used (AP2 `payment.agent_recurrence` frequencies). */
export const RECURRENCE_FREQUENCIES = [
  'ON_DEMAND',
  'DAILY',
  'WEEKLY',
  'BIWEEKLY',
  'MONTHLY',
  'QUARTERLY',
  'ANNUALLY',
] as const;

export const DOTTED_TYPE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$/;
const TYPE_PATTERN = /^(\*|[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*(\.\*)?)$/;
// A domain name, or `*.` and a domain name (its subdomains).
const NAME = Joi.string()
  .trim()
  .lowercase()
  .min(1)
  .max(253)
  .pattern(/^(\*\.)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/);
const wildcardOrList = (label: string) =>
  Joi.alternatives().try(
    Joi.array().items(Joi.string().valid('*')).length(1),
    Joi.array()
      .items(NAME.messages({ 'string.pattern.base': `{{#label}} must be a ${label} name or "*"` }))
      .min(1)
      .max(500)
      .unique(),
  );

const actionName = Joi.string()
  .max(128)
  .pattern(TYPE_PATTERN)
  .custom((value: string, helpers) => {
    if (!value.includes('.') && value !== '*' && !(BUILT_IN_TYPES as readonly string[]).includes(value)) {
      return helpers.message({
        custom: `{{#label}} "${value}" is not a built-in type (${BUILT_IN_TYPES.join(', ')}); custom types are dotted, such as crm.update`,
      });
    }
    return value;
  });

export const ruleSchema = Joi.object<MandateRule>({
  id: Joi.string().pattern(/^mnd_[0-9A-Za-z]{22}$/),
  actions: Joi.array().items(actionName).min(1).max(100).unique().required(),
  merchants: wildcardOrList('merchant'),
  domains: wildcardOrList('domain'),
  currencies: Joi.array()
    .items(
      Joi.string()
        .pattern(/^[A-Z]{3}$/)
        .messages({ 'string.pattern.base': '{{#label}} must be three upper-case letters' }),
    )
    .min(1)
    .max(50)
    .unique(),
  maxAmount: Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER),
  periodLimit: Joi.object({
    amount: Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER).required(),
    period: Joi.string().valid('day', 'week', 'month').required(),
  }),
  approval: Joi.object({
    above: Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER).required(),
    approvers: Joi.array()
      .items(Joi.string().pattern(/^usr_[0-9A-Za-z]{22}$/))
      .min(1)
      .max(50)
      .unique(),
    count: Joi.number().valid(1, 2).default(1),
    separationOfDuties: Joi.boolean().default(false),
  }).custom((approval: { approvers?: string[]; count: number }, helpers) => {
    // Each person approves once: a two-person rule naming one approver could never be met.
    if (approval.approvers && approval.approvers.length < approval.count) {
      return helpers.message({
        custom: `{{#label}} asks for ${approval.count} approvals but names ${approval.approvers.length} approver(s)`,
      });
    }
    return approval;
  }),
  minAmount: Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER),
  budget: Joi.object({ amount: Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER).required() }),
  recurrence: Joi.object({
    frequency: Joi.string()
      .valid(...RECURRENCE_FREQUENCIES)
      .required(),
    maxOccurrences: Joi.number().integer().min(1).max(1_000_000),
  }),
  executionDate: Joi.object({
    notBefore: Joi.string().isoDate(),
    notAfter: Joi.string().isoDate(),
  }).or('notBefore', 'notAfter'),
  source: Joi.object({
    kind: Joi.string().valid('ap2').required(),
    mandateId: Joi.string()
      .pattern(/^ap2_[0-9A-Za-z]{22}$/)
      .required(),
    credentialHash: Joi.string()
      .pattern(/^[A-Za-z0-9_-]{43}$/)
      .required(),
    issuer: Joi.string().max(500).required(),
    expiresAt: Joi.string().isoDate(),
    presentationRequired: Joi.boolean(),
  }),
})
  // Limits need a currency: an amount is meaningless without one.
  .with('maxAmount', 'currencies')
  .with('minAmount', 'currencies')
  .with('budget', 'currencies')
  .with('periodLimit', 'currencies');

export const rulesSchema = Joi.array().items(ruleSchema).max(200).required();

/** The same rule twice (ids aside) would only confuse readers of the mandate; it is refused. */
export function duplicateRules(
  rules: ReadonlyArray<Record<string, unknown>>,
  canonical: (v: unknown) => string,
): Array<{ field: string; message: string }> {
  const seen = new Map<string, number>();
  const out: Array<{ field: string; message: string }> = [];
  rules.forEach(({ id: _id, ...rest }, i) => {
    const key = canonical(rest);
    const first = seen.get(key);
    if (first === undefined) seen.set(key, i);
    else out.push({ field: `rules.${i}`, message: `"rules[${i}]" repeats rules[${first}]` });
  });
  return out;
}

export const mandateInputSchema = Joi.object({
  rules: rulesSchema,
  confirmBroaden: Joi.boolean().default(false),
});

export interface MandateInput {
  rules: Array<Omit<MandateRule, 'id'> & { id?: string }>;
  confirmBroaden: boolean;
}

export const templateInputSchema = Joi.object({
  name: Joi.string().trim().min(1).max(200).required(),
  rules: rulesSchema,
});

export interface TemplateInput {
  name: string;
  rules: Array<Omit<MandateRule, 'id'> & { id?: string }>;
}
