import { createHash } from 'node:crypto';
import { canonicalJson } from '../lib/canonical-json.js';
import type { MandateRule, PeriodCharge, Store } from '../store/index.js';

/**
 * Period usage: what an agent spent under a rule, kept in daily buckets.
 * Rules:
 * - Usage belongs to what a rule covers (its actions, merchants, domains and currencies), not to
 *   its id or its limits: a rule saved again, repeated, or given a new limit or period keeps
 *   counting what was spent under the same cover. Removing a rule and adding it back cannot
 *   reset a budget.
 * - Buckets are per day (UTC); a period's usage is the sum of its days so far, so changing a
 *   rule's period from day to week counts the whole week.
 */
export function usageKeyOf(rule: MandateRule): string {
  const sorted = (xs: readonly string[] | undefined) => (xs ? [...xs].sort() : null);
  const cover = {
    actions: sorted(rule.actions),
    merchants: sorted(rule.merchants),
    domains: sorted(rule.domains),
    currencies: sorted(rule.currencies),
  };
  return createHash('sha256').update(canonicalJson(cover)).digest('base64url').slice(0, 22);
}

export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

const dayBefore = (day: string) => new Date(Date.parse(`${day}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);

export function usageRepo(store: Store) {
  const t = store.tables;
  return {
    /** Minor units spent under a cover in a currency from `periodStart` (a day) on. */
    sum(wid: string, aid: string, usageKey: string, currency: string, periodStart: string): number {
      return t.periodUsage
        .scan([wid, aid, usageKey, currency], { after: dayBefore(periodStart) })
        .reduce((n, e) => n + e.value, 0);
    },
    /** Adds (or, negative, gives back) an amount on the day it was charged. Only inside store.write(). */
    add(wid: string, aid: string, charge: PeriodCharge, delta: number): void {
      const key = [wid, aid, charge.usageKey, charge.currency, charge.day];
      t.periodUsage.put(key, Math.max(0, (t.periodUsage.get(key) ?? 0) + delta));
    },
  };
}
