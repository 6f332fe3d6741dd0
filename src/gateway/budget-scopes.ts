import type { KeyRecord } from '../keys/records.js';
import type { BudgetRecord } from './records.js';
import type { GatewayRepo } from './repo.js';

/**
 * What a budget's scope binds, and when its period ends: the pure reads the budgets' admission,
 * their creation and the console's overview share (budgets.ts).
 */

/** `kind:id`, as the x-svc-budget-scope header and the refusals name a budget's scope. */
export const scopeId = (b: BudgetRecord): string => `${b.scope.kind}:${b.scope.id}`;

/** Whether the budget binds this key's traffic. */
export function applies(b: BudgetRecord, key: KeyRecord): boolean {
  switch (b.scope.kind) {
    case 'workspace':
      return true;
    case 'team':
      return key.team === b.scope.id;
    case 'principal':
      return key.principal === b.scope.id;
    case 'key':
      return key.id === b.scope.id;
    case 'agent':
      return key.agentId === b.scope.id;
  }
}

/**
 * Why a scope cannot bind in workspace `wid`, or null: a workspace scope names this workspace,
 * a key or agent scope one of its keys or agents (another workspace's would never bind).
 */
export async function scopeFault(
  repo: Pick<GatewayRepo, 'hasKey' | 'hasAgent'>,
  wid: string,
  scope: BudgetRecord['scope'],
): Promise<string | null> {
  switch (scope.kind) {
    case 'workspace':
      return scope.id === wid ? null : `"scope.id" must be this workspace's id (${wid})`;
    case 'key':
      return (await repo.hasKey(wid, scope.id)) ? null : '"scope.id" names no key of this workspace';
    case 'agent':
      return (await repo.hasAgent(wid, scope.id)) ? null : '"scope.id" names no agent of this workspace';
    case 'team':
    case 'principal':
      return null;
  }
}

/** When the period that starts on `periodStart` (a UTC date) ends, in ms. */
export function periodEnd(b: { budget: Pick<BudgetRecord, 'period'>; periodStart: string }): number {
  const start = Date.parse(`${b.periodStart}T00:00:00.000Z`);
  const d = new Date(start);
  if (b.budget.period === 'day') return start + 86_400_000;
  if (b.budget.period === 'week') return start + 7 * 86_400_000;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
