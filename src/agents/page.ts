import type { AgentRecord } from './records.js';
import type { AgentsRepo } from './repo.js';
import { sees, toAgentView, type AgentView, type AgentViewer } from './view.js';

/**
 * A page of the live agents `viewer` sees (every agent when no viewer is named: machines, the
 * CLI), in id order after `after`, with the workspace's stop-all read once for the page.
 */
export async function pageOfAgents(
  repo: AgentsRepo,
  wid: string,
  options: { after?: string; limit: number },
  viewer?: AgentViewer,
): Promise<{ data: AgentView[]; next: string | null }> {
  const out: AgentRecord[] = [];
  let after = options.after;
  // Removed agents and those the viewer does not see are skipped, so read on until the page
  // is full or the table ends.
  for (;;) {
    const rows = await repo.list(wid, { ...(after ? { after } : {}), limit: options.limit + 1 });
    for (const a of rows) if (!a.removedAt && (!viewer || sees(a, viewer))) out.push(a);
    if (rows.length <= options.limit || out.length > options.limit) break;
    after = rows[rows.length - 1]!.id;
  }
  const page = out.slice(0, options.limit);
  const stopAll = await repo.stopAll(wid);
  return {
    data: page.map((a) => toAgentView(a, stopAll)),
    next: out.length > options.limit ? page[page.length - 1]!.id : null,
  };
}
