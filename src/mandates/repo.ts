import type { Store } from '../store/index.js';
import type { MandateRecord, MandateRule, PeriodCharge, TemplateRecord } from './records.js';
import { USES, type UsageLookup, type UsageQuery } from './evaluate.js';

const dayBefore = (day: string) => new Date(Date.parse(`${day}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
const queryKey = (usageKey: string, currency: string, periodStart: string) =>
  JSON.stringify([usageKey, currency, periodStart]);

/**
 * Period usage (usage.ts says what it counts): the daily buckets, [wid, aid, usageKey, currency, day].
 * Writes only inside store.write().
 */
export function usageRepo(store: Store) {
  const t = store.tables;
  const sum = async (wid: string, aid: string, usageKey: string, currency: string, periodStart: string) =>
    (await t.periodUsage.scan([wid, aid, usageKey, currency], { after: dayBefore(periodStart) })).reduce(
      (n, e) => n + e.value,
      0,
    );
  return {
    /** Minor units spent under a cover in a currency from `periodStart` (a day) on. */
    sum,
    /**
     * Reads the usages an evaluation will ask for (`usageQueries`) and answers them synchronously.
     * A usage not read here is a programming error, thrown rather than counted as nothing.
     */
    async lookup(wid: string, aid: string, queries: readonly UsageQuery[]): Promise<UsageLookup> {
      const read = await Promise.all(
        queries.map(
          async (q) =>
            [
              queryKey(q.usageKey, q.currency, q.periodStart),
              await sum(wid, aid, q.usageKey, q.currency, q.periodStart),
            ] as const,
        ),
      );
      const sums = new Map(read);
      return (usageKey, currency, periodStart) => {
        const used = sums.get(queryKey(usageKey, currency, periodStart));
        if (used === undefined) throw new Error('period usage asked for that was not read ahead (usageQueries)');
        return used;
      };
    },
    /**
     * Adds (or, negative, gives back) an amount on the day it was charged. The action's first
     * charge (its whole amount) also counts one use when its rule counts uses (`occurrence`); a
     * settlement's give-back leaves the use counted. Only inside store.write().
     */
    async add(wid: string, aid: string, charge: PeriodCharge, delta: number): Promise<void> {
      const key = [wid, aid, charge.usageKey, charge.currency, charge.day];
      await t.periodUsage.put(key, Math.max(0, ((await t.periodUsage.get(key)) ?? 0) + delta));
      if (charge.occurrence && delta > 0 && delta === charge.amount) {
        const uses = [wid, aid, charge.usageKey, USES, charge.day];
        await t.periodUsage.put(uses, ((await t.periodUsage.get(uses)) ?? 0) + 1);
      }
    },
  };
}

/** Mandates and templates. Writes only inside store.write(). */
export function mandatesRepo(store: Store) {
  const t = store.tables;
  return {
    mandate(wid: string, aid: string): Promise<MandateRecord | undefined> {
      return t.mandates.get([wid, aid]);
    },
    async rules(wid: string, aid: string): Promise<MandateRule[]> {
      return (await t.mandates.get([wid, aid]))?.rules ?? [];
    },
    /** Every mandate of the workspace, with the agent it belongs to. */
    async inWorkspace(wid: string): Promise<Array<{ agentId: string; mandate: MandateRecord }>> {
      return (await t.mandates.scan([wid])).map((e) => ({ agentId: String(e.key[1]), mandate: e.value }));
    },
    async put(m: MandateRecord): Promise<void> {
      await t.mandates.put([m.workspaceId, m.agentId], m);
    },
    template(wid: string, id: string): Promise<TemplateRecord | undefined> {
      return t.templates.get([wid, id]);
    },
    async templates(wid: string, options: { after?: string; limit?: number } = {}): Promise<TemplateRecord[]> {
      return (await t.templates.scan([wid], options)).map((e) => e.value);
    },
    async putTemplate(template: TemplateRecord): Promise<void> {
      await t.templates.put([template.workspaceId, template.id], template);
    },
  };
}

export type MandatesRepo = ReturnType<typeof mandatesRepo>;
