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
 * - A rule with `budget` or `recurrence` also counts over all time (a budget) and counts its uses
 *   (under the currency `#`): the action's first charge adds one use.
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
  // A rule imported from an AP2 credential counts what was spent under that credential only: a
  // new credential is a new budget. Its buckets are kept as long as it may count (retention).
  if (rule.source) {
    const withSource = { ...cover, credential: rule.source.credentialHash };
    return AP2_USAGE + createHash('sha256').update(canonicalJson(withSource)).digest('base64url').slice(0, 22);
  }
  return createHash('sha256').update(canonicalJson(cover)).digest('base64url').slice(0, 22);
}

/** The prefix of an imported credential's usage keys: its budget and use counts are never swept. */
export const AP2_USAGE = 'ap2.';

export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
