import type { ApprovalsRepo } from './repo.js';

/** A rule people could add to an agent's mandate, and how many approvals it would have spared. */
export interface Suggestion {
  agentId: string;
  approvedCount: number;
  rule: {
    actions: string[];
    merchants?: string[];
    domains?: string[];
    currencies?: string[];
    maxAmount?: number;
  };
}

interface Group {
  agentId: string;
  type: string;
  merchant: string | null;
  domain: string | null;
  currency: string | null;
  count: number;
  max: number;
}

/**
 * Suggested rules (approvals:read): where people approved the same kind of payment for an agent
 * at least `minApprovals` times, the rule that would have allowed them outright. Only a
 * suggestion: a person decides whether to add it to the mandate. Reads only.
 */
export async function suggestRules(repo: ApprovalsRepo, wid: string, minApprovals = 3): Promise<Suggestion[]> {
  const groups = new Map<string, Group>();
  const approved = (await repo.approvals(wid)).filter((a) => a.status === 'approved' && !a.freeze);
  const actions = await Promise.all(approved.map((a) => repo.action(wid, a.actionId)));
  for (const [i, a] of approved.entries()) {
    const action = actions[i];
    if (!action) continue;
    const merchant = action.payment?.merchant ?? null;
    const domain = action.target?.domain ?? null;
    const currency = action.payment?.currency ?? null;
    const key = JSON.stringify([a.agentId, action.type, merchant, domain, currency]);
    const g = groups.get(key) ?? {
      agentId: a.agentId,
      type: action.type,
      merchant,
      domain,
      currency,
      count: 0,
      max: 0,
    };
    g.count += 1;
    g.max = Math.max(g.max, action.payment?.amount ?? 0);
    groups.set(key, g);
  }
  return [...groups.values()]
    .filter((g) => g.count >= minApprovals)
    .sort((x, y) => y.count - x.count)
    .map((g) => ({
      agentId: g.agentId,
      approvedCount: g.count,
      rule: {
        actions: [g.type],
        ...(g.merchant ? { merchants: [g.merchant] } : {}),
        ...(g.domain ? { domains: [g.domain] } : {}),
        ...(g.currency ? { currencies: [g.currency], maxAmount: g.max } : {}),
      },
    }));
}
