import type { ApprovalsContext } from './context.js';
import type { ApprovalRecord } from './records.js';
import type { ApprovalView } from './service.js';
import { statusAt } from './view.js';

export interface ListOptions {
  status?: ApprovalRecord['status'];
  after?: string;
  limit: number;
  onlyFor?: string;
}

/**
 * Oldest first (by when they were asked, then id): the one waiting longest is decided first.
 * `after` is the id of the last approval of the previous page. `onlyFor`: a member sees the
 * approvals of agents that act for them (or name them). Reads only.
 */
export async function listApprovals(
  ctx: ApprovalsContext,
  wid: string,
  options: ListOptions,
): Promise<{ data: ApprovalView[]; next: string | null }> {
  const { repo } = ctx;
  const now = ctx.clock.now();
  const [all, cursor] = await Promise.all([
    repo.approvals(wid),
    options.after ? repo.approval(wid, options.after) : undefined,
  ]);
  // Whom each agent acts for, read once per agent (a member sees the approvals of their agents).
  const onlyFor = options.onlyFor;
  const actsFor = new Map<string, string | null>();
  if (onlyFor) {
    const agentIds = [...new Set(all.map((a) => a.agentId))];
    const agents = await Promise.all(agentIds.map((aid) => repo.agent(wid, aid)));
    agentIds.forEach((aid, i) => actsFor.set(aid, agents[i]?.actsFor ?? null));
  }
  const matching = all
    .filter((a) => !onlyFor || a.approvers?.includes(onlyFor) || actsFor.get(a.agentId) === onlyFor)
    .filter((a) => !options.status || statusAt(a, now) === options.status)
    .sort((x, y) => (x.createdAt === y.createdAt ? (x.id < y.id ? -1 : 1) : x.createdAt < y.createdAt ? -1 : 1));
  const rest = cursor
    ? matching.filter((v) => v.createdAt > cursor.createdAt || (v.createdAt === cursor.createdAt && v.id > cursor.id))
    : matching;
  const page = rest.slice(0, options.limit);
  return {
    data: await Promise.all(page.map((a) => ctx.view(a, now))),
    next: rest.length > options.limit ? page[page.length - 1]!.id : null,
  };
}
