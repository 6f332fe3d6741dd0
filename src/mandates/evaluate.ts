import { formatMoney } from '../lib/money.js';
import type { MandateRule, PeriodCharge } from './records.js';
import { dayOf, usageKeyOf } from './usage.js';

/**
 * Mandate evaluation (docs/gate.md#the-gate): an action is allowed when some rule covers its type,
 * merchant or domain, currency and amounts; it needs a person when the covering rule's
 * `approval.above` is exceeded; otherwise it is denied.
 *
 * Rules:
 * - Default deny: no rules, no cover. A rule without `merchants` covers only actions that name no
 *   merchant (likewise `domains`); a rule without `currencies` covers only actions without an amount.
 * - Period limits are summed per rule's cover (usage.ts), per currency, per calendar period in UTC
 *   (day; week from Monday; month), over the period's allowed and settled amounts.
 * - `minAmount`, `budget` (a total over the rule's life), `recurrence` (once per window, at most
 *   `maxOccurrences` uses) and `executionDate` hold like the limits; a rule from an imported AP2
 *   credential stops covering at the credential's expiry (docs/ap2.md#mapping-ap2-constraints-to-rules).
 * - With a presented AP2 mandate, only the rules made from it judge the action.
 * - Among covering rules, one that allows outright wins over one that needs approval.
 * - A refusal names the furthest check any rule got to (type, then merchant or domain, then
 *   currency, then amount, then period), so the signal says what would have to change.
 */
export interface ActionFacts {
  type: string;
  amount: number | null;
  currency: string | null;
  merchant: string | null;
  domain: string | null;
  /**
   * The imported AP2 open mandate (`ap2_…`) a closed mandate presented with the action chains to:
   * only that mandate's rules judge such an action. Absent or null: nothing was presented.
   */
  ap2Mandate?: string | null;
}

export type DenySignal =
  | 'type_not_allowed'
  | 'merchant_not_allowed'
  | 'domain_not_allowed'
  | 'currency_not_allowed'
  | 'over_limit'
  | 'period_limit'
  | 'under_minimum'
  | 'budget_exhausted'
  | 'recurrence_limit'
  | 'outside_execution_window'
  | 'mandate_expired'
  | 'presentation_required';

export type Evaluation =
  | { decision: 'allow'; rule: MandateRule; charge: PeriodCharge | null; signals: string[]; reason: string }
  | { decision: 'review'; rule: MandateRule; signals: string[]; reason: string }
  | { decision: 'deny'; rule: null; signals: DenySignal[]; reason: string };

/**
 * Minor units already allowed or settled under a rule's cover (usage.ts) from a period's start on.
 * Synchronous: the caller reads the usages `usageQueries` names from the store before evaluating.
 */
export type UsageLookup = (usageKey: string, currency: string, periodStart: string) => number;

export function periodStart(period: 'day' | 'week' | 'month', nowMs: number): string {
  const d = new Date(nowMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  if (period === 'month') return new Date(Date.UTC(y, m, 1)).toISOString().slice(0, 10);
  if (period === 'day') return new Date(Date.UTC(y, m, d.getUTCDate())).toISOString().slice(0, 10);
  const sinceMonday = (d.getUTCDay() + 6) % 7;
  return new Date(Date.UTC(y, m, d.getUTCDate() - sinceMonday)).toISOString().slice(0, 10);
}

export function typeMatches(pattern: string, type: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return type.startsWith(pattern.slice(0, -1));
  return pattern === type;
}

export function nameMatches(list: readonly string[] | undefined, name: string | null): boolean {
  if (name === null) return list === undefined || list.includes('*');
  if (list === undefined) return false;
  const n = name.toLowerCase();
  return list.some((p) => p === '*' || p === n || (p.startsWith('*.') && n.endsWith(p.slice(1))));
}

/** A rule's checks in order; a refusal names the furthest stage any rule reached. */
const STAGE = { type: 0, name: 1, window: 2, currency: 3, amount: 4, period: 5, passed: 6 } as const;

/** The first day of all time: a `budget` or `maxOccurrences` counts every day of its cover. */
export const ALL_TIME = '1970-01-01';

/** The bucket currency under which a cover's uses (not amounts) are counted, for `recurrence`. */
export const USES = '#';

const DAY_MS = 86_400_000;
/** A `recurrence` window, in days: one use per window (28 days lets a monthly payment fall on the same date). */
const RECURRENCE_DAYS: Record<string, number> = {
  DAILY: 1,
  WEEKLY: 7,
  BIWEEKLY: 14,
  MONTHLY: 28,
  QUARTERLY: 90,
  ANNUALLY: 365,
};

/** The first day of the rolling recurrence window ending today, or null (ON_DEMAND: no spacing). */
export function recurrenceStart(frequency: string, nowMs: number): string | null {
  const days = RECURRENCE_DAYS[frequency];
  return days === undefined ? null : dayOf(nowMs - (days - 1) * DAY_MS);
}

/**
 * The rules that may judge an action: with a presented AP2 mandate, only the rules made from it;
 * without, every rule.
 */
export function rulesFor(rules: readonly MandateRule[], a: ActionFacts): readonly MandateRule[] {
  return a.ap2Mandate ? rules.filter((r) => r.source?.mandateId === a.ap2Mandate) : rules;
}

interface RuleOutcome {
  stage: number;
  signal: DenySignal | null;
  charge: PeriodCharge | null;
  needsApproval: boolean;
  /** The limit an amount stage failed on, for the reason: the rule's `maxAmount`, or its period limit and what is used of it. */
  limit?: { amount: number; period?: string; used?: number };
}

const fail = (stage: number, signal: DenySignal, limit?: RuleOutcome['limit']): RuleOutcome => ({
  stage,
  signal,
  charge: null,
  needsApproval: false,
  ...(limit ? { limit } : {}),
});

/**
 * The checks before the period limit: the rule's outcome when they settle it, or null when the
 * rule goes on to its period limit (if any) and approval step, which only then need its usage.
 */
function beforePeriod(rule: MandateRule, a: ActionFacts, nowMs: number): RuleOutcome | null {
  if (!rule.actions.some((p) => typeMatches(p, a.type))) return fail(STAGE.type, 'type_not_allowed');
  if (!nameMatches(rule.merchants, a.merchant)) return fail(STAGE.name, 'merchant_not_allowed');
  if (!nameMatches(rule.domains, a.domain)) return fail(STAGE.name, 'domain_not_allowed');
  const window = outsideWindow(rule, a, nowMs);
  if (window) return fail(STAGE.window, window);
  if (a.amount === null) return { stage: STAGE.passed, signal: null, charge: null, needsApproval: false };
  if (!rule.currencies || !rule.currencies.includes(a.currency!)) return fail(STAGE.currency, 'currency_not_allowed');
  if (rule.maxAmount !== undefined && a.amount > rule.maxAmount)
    return fail(STAGE.amount, 'over_limit', { amount: rule.maxAmount });
  if (rule.minAmount !== undefined && a.amount < rule.minAmount)
    return fail(STAGE.amount, 'under_minimum', { amount: rule.minAmount });
  return null;
}

/** The time checks: the source credential's expiry, the execution window, a presentation the rule needs. */
function outsideWindow(rule: MandateRule, a: ActionFacts, nowMs: number): DenySignal | null {
  if (rule.source?.expiresAt && Date.parse(rule.source.expiresAt) <= nowMs) return 'mandate_expired';
  const { notBefore, notAfter } = rule.executionDate ?? {};
  if ((notBefore && nowMs < Date.parse(notBefore)) || (notAfter && nowMs > Date.parse(notAfter)))
    return 'outside_execution_window';
  if (rule.source?.presentationRequired && a.ap2Mandate !== rule.source.mandateId) return 'presentation_required';
  return null;
}

/** Whether a rule keeps usage: a period limit, a budget or a recurrence. */
const keepsUsage = (rule: MandateRule): boolean => Boolean(rule.periodLimit || rule.budget || rule.recurrence);

/** One period usage `evaluate` will look up: a rule's cover, in a currency, from a day on. */
export interface UsageQuery {
  usageKey: string;
  currency: string;
  periodStart: string;
}

/**
 * The period usages `evaluate(rules, a, …, nowMs)` will ask its lookup for (each once), so that
 * the caller can read them from the store first and hand `evaluate` a lookup that only answers
 * from them: evaluation itself stays pure and synchronous.
 */
export function usageQueries(rules: readonly MandateRule[], a: ActionFacts, nowMs: number): UsageQuery[] {
  const out = new Map<string, UsageQuery>();
  const add = (usageKey: string, currency: string, start: string) =>
    out.set(JSON.stringify([usageKey, currency, start]), { usageKey, currency, periodStart: start });
  for (const rule of rulesFor(rules, a)) {
    if (!keepsUsage(rule) || beforePeriod(rule, a, nowMs) !== null) continue;
    const key = usageKeyOf(rule);
    if (rule.periodLimit) add(key, a.currency!, periodStart(rule.periodLimit.period, nowMs));
    if (rule.budget) add(key, a.currency!, ALL_TIME);
    const since = rule.recurrence ? recurrenceStart(rule.recurrence.frequency, nowMs) : null;
    if (since) add(key, USES, since);
    if (rule.recurrence?.maxOccurrences !== undefined) add(key, USES, ALL_TIME);
  }
  return [...out.values()];
}

/** The usage checks (period limit, budget, recurrence): a failed outcome, or null when all pass. */
function usageFails(rule: MandateRule, a: ActionFacts, usage: UsageLookup, nowMs: number): RuleOutcome | null {
  const key = usageKeyOf(rule);
  const amount = a.amount!;
  if (rule.periodLimit) {
    const used = usage(key, a.currency!, periodStart(rule.periodLimit.period, nowMs));
    if (used + amount > rule.periodLimit.amount)
      return fail(STAGE.period, 'period_limit', {
        amount: rule.periodLimit.amount,
        period: rule.periodLimit.period,
        used,
      });
  }
  if (rule.budget) {
    const used = usage(key, a.currency!, ALL_TIME);
    if (used + amount > rule.budget.amount)
      return fail(STAGE.period, 'budget_exhausted', { amount: rule.budget.amount, used });
  }
  if (rule.recurrence) {
    const since = recurrenceStart(rule.recurrence.frequency, nowMs);
    const max = rule.recurrence.maxOccurrences;
    if ((since && usage(key, USES, since) > 0) || (max !== undefined && usage(key, USES, ALL_TIME) >= max))
      return fail(STAGE.period, 'recurrence_limit', { amount: 0 });
  }
  return null;
}

function judge(rule: MandateRule, a: ActionFacts, usage: UsageLookup, nowMs: number, approved: boolean): RuleOutcome {
  const settled = beforePeriod(rule, a, nowMs);
  if (settled) return settled;
  // beforePeriod passed only for an action with an amount in one of the rule's currencies.
  const amount = a.amount!;
  let charge: PeriodCharge | null = null;
  if (keepsUsage(rule)) {
    const failed = usageFails(rule, a, usage, nowMs);
    if (failed) return failed;
    charge = { usageKey: usageKeyOf(rule), currency: a.currency!, day: dayOf(nowMs), amount };
    if (rule.recurrence) charge.occurrence = true;
  }
  return {
    stage: STAGE.passed,
    signal: null,
    charge,
    needsApproval: !approved && rule.approval !== undefined && amount > rule.approval.above,
  };
}

/** The action's amount as people read it (only the amount stages name it: the action has one there). */
const paid = (a: ActionFacts): string => formatMoney(a.amount!, a.currency!);

/**
 * Why each furthest check refused, in words. `limit`: for over_limit the highest per-action limit
 * of the covering rules (the most any of them allows), for period_limit the limit of the first
 * rule that got that far, with what its period has used.
 */
const DENY_REASONS: Record<DenySignal, (a: ActionFacts, limit: RuleOutcome['limit']) => string> = {
  type_not_allowed: (a) => `No rule of this agent's mandate allows actions of type ${a.type}.`,
  merchant_not_allowed: (a) =>
    a.merchant === null
      ? 'Every rule for this type names its merchants; this action names none.'
      : `No rule allows paying ${a.merchant}.`,
  domain_not_allowed: (a) =>
    a.domain === null
      ? 'Every rule for this type names its domains; this action names none.'
      : `No rule allows acting on ${a.domain}.`,
  currency_not_allowed: (a) =>
    a.currency === null
      ? 'This action carries no amount, but every covering rule limits amounts.'
      : `No covering rule allows the currency ${a.currency}.`,
  over_limit: (a, limit) =>
    `The amount ${paid(a)} is over every covering rule's per-action limit` +
    (limit ? ` (the highest is ${formatMoney(limit.amount, a.currency!)}).` : '.'),
  period_limit: (a, limit) =>
    `The amount ${paid(a)} would take this period's total over the rule's limit` +
    (limit
      ? ` (${formatMoney(limit.amount, a.currency!)} a ${limit.period}, of which ${formatMoney(limit.used ?? 0, a.currency!)} is used).`
      : '.'),
  under_minimum: (a, limit) =>
    `The amount ${paid(a)} is under every covering rule's least amount` +
    (limit ? ` (${formatMoney(limit.amount, a.currency!)}).` : '.'),
  budget_exhausted: (a, limit) =>
    `The amount ${paid(a)} would take the rule's total budget over its limit` +
    (limit
      ? ` (${formatMoney(limit.amount, a.currency!)} in all, of which ${formatMoney(limit.used ?? 0, a.currency!)} is used).`
      : '.'),
  recurrence_limit: () => "The rule's recurrence allows no further use now (once per its window, up to its count).",
  outside_execution_window: () => "The action falls outside the rule's execution dates.",
  mandate_expired: () => 'The credential the rule was imported from has expired.',
  presentation_required: () =>
    "The rule's AP2 mandate constrains what only a presented closed mandate shows: present one (ap2.mandate).",
};

/** `approved`: people have approved this action, so no rule's approval step applies (the fresh check at approval). */
export function evaluate(
  rules: readonly MandateRule[],
  a: ActionFacts,
  usage: UsageLookup,
  nowMs: number,
  options: { approved?: boolean } = {},
): Evaluation {
  let best: RuleOutcome | null = null;
  let review: MandateRule | null = null;
  rules = rulesFor(rules, a);
  for (const rule of rules) {
    const outcome = judge(rule, a, usage, nowMs, options.approved ?? false);
    if (outcome.signal === null && !outcome.needsApproval) {
      return { decision: 'allow', rule, charge: outcome.charge, signals: [], reason: `Allowed by rule ${rule.id}.` };
    }
    if (outcome.signal === null) review ??= rule;
    else if (!best || outcome.stage > best.stage) best = outcome;
    else if (
      outcome.signal === 'over_limit' &&
      best.signal === 'over_limit' &&
      outcome.limit!.amount > best.limit!.amount
    )
      best = outcome;
  }
  if (review) {
    return {
      decision: 'review',
      rule: review,
      signals: ['approval_required'],
      reason: `Rule ${review.id} asks a person to approve amounts above ${formatMoney(review.approval!.above, a.currency!)}.`,
    };
  }
  const signal = best?.signal ?? 'type_not_allowed';
  return {
    decision: 'deny',
    rule: null,
    signals: [signal],
    reason:
      rules.length === 0
        ? 'This agent has no mandate: every action is denied until one is set.'
        : DENY_REASONS[signal](a, best?.limit),
  };
}
