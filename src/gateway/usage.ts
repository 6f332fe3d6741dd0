import type { CallRecord } from '../store/index.js';
import type { CallLog } from './calls.js';

/**
 * Usage reports for admin keys: calls grouped by model, principal, team, agent, key or task
 * class over a time window, with tokens, cost, failures and mean latency.
 */
type By = 'model' | 'principal' | 'team' | 'agent' | 'key' | 'taskClass';

const groupOf = (c: CallRecord, by: By): string => {
  switch (by) {
    case 'model':
      return c.model ?? '(none)';
    case 'principal':
      return c.principal ?? '(none)';
    case 'team':
      return c.team ?? '(none)';
    case 'agent':
      return c.agentId ?? '(none)';
    case 'key':
      return c.keyId;
    case 'taskClass':
      return c.taskClass;
  }
};

export function usageReport(calls: CallLog, wid: string, q: { from?: Date; to?: Date; by: By }) {
  const from = q.from?.toISOString();
  const to = q.to?.toISOString();
  const groups = new Map<
    string,
    {
      group: string;
      calls: number;
      failed: number;
      inputTokens: number;
      outputTokens: number;
      costMicros: number;
      latencyMs: number;
    }
  >();
  let after: string | undefined;
  for (;;) {
    const page = calls.page(wid, { ...(after ? { after } : {}), limit: 1000 });
    for (const c of page) {
      if ((from && c.at < from) || (to && c.at >= to)) continue;
      const name = groupOf(c, q.by);
      const g = groups.get(name) ?? {
        group: name,
        calls: 0,
        failed: 0,
        inputTokens: 0,
        outputTokens: 0,
        costMicros: 0,
        latencyMs: 0,
      };
      g.calls += 1;
      if (c.outcome !== 'ok' && c.outcome !== 'dry_run') g.failed += 1;
      g.inputTokens += c.inputTokens;
      g.outputTokens += c.outputTokens;
      g.costMicros += c.costMicros;
      g.latencyMs += c.latencyMs;
      groups.set(name, g);
    }
    if (page.length < 1000) break;
    after = page[page.length - 1]!.id;
  }
  const data = [...groups.values()].map(({ latencyMs, ...g }) => ({
    ...g,
    meanLatencyMs: g.calls > 0 ? Math.round(latencyMs / g.calls) : 0,
  }));
  return { by: q.by, from: from ?? null, to: to ?? null, data };
}
