import { createHash } from 'node:crypto';
import { canonicalJson } from '../lib/canonical-json.js';
import type { MandateRule } from './records.js';

/**
 * Period usage: what an agent spent under a rule, kept in daily buckets.
 * Rules:
 * - Usage belongs to what a rule covers (its actions, merchants, domains and currencies), not to
 *   its id or its limits: a rule saved again, repeated, or given a new limit or period keeps
 *   counting what was spent under the same cover. Removing a rule and adding it back cannot
 *   reset a budget.
 * - Buckets are per day (UTC); a period's usage is the sum of its days so far, so changing a
 *   rule's period from day to week counts the whole week.
 * Its reads and writes (the daily buckets) are in repo.ts.
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
