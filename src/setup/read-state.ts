import type { BudgetRecord } from '../gateway/records.js';
import { setupRepo } from './repo.js';
import { rememberedKey, type WorkspaceState } from './state.js';
import type { SetupDeps } from './types.js';

/** Every page of a paged list. */
async function everything<T>(
  list: (o: { limit: number; after?: string }) => Promise<{ data: T[]; next: string | null }>,
): Promise<T[]> {
  const out: T[] = [];
  for (let after: string | undefined; ;) {
    const page = await list({ limit: 200, ...(after ? { after } : {}) });
    out.push(...page.data);
    if (!page.next || page.data.length === 0) return out;
    after = page.next;
  }
}

/**
 * The workspace as `svc apply` compares it with a file and `svc export` writes it, read once
 * through each domain's service (and apply's own remembered resources).
 */
export async function readState(deps: SetupDeps, wid: string): Promise<WorkspaceState> {
  const { people, agents, mandates, blueprints, budgets, mcp, registry } = deps;
  const [templates, bps, live, budgetRows, servers, integrations, remembered] = await Promise.all([
    everything((o) => mandates.templates(wid, o)),
    everything((o) => blueprints.page(wid, o)),
    agents.list(wid),
    budgets.list(wid),
    mcp.listAll(wid),
    registry.view(wid),
    setupRepo(deps.store).list(wid),
  ]);
  const mandateRows = await Promise.all(live.map((a) => mandates.get(wid, a.id)));
  const emails = new Map<string, string>();
  const ids = new Set<string>([
    ...live.flatMap((a) => (a.actsFor ? [a.actsFor] : [])),
    ...templates.flatMap((tpl) => tpl.rules.flatMap((r) => r.approval?.approvers ?? [])),
  ]);
  for (const id of ids) {
    const found = await people.me(id).catch(() => undefined);
    if (found) emails.set(id, found.user.email);
  }
  return {
    workspaceId: wid,
    templates,
    blueprints: bps,
    agents: live,
    mandates: new Map(live.map((a, i) => [a.id, mandateRows[i]!.rules.map(({ id: _id, ...r }) => r)])),
    budgets: budgetRows.map(({ spentMicros: _s, reservedMicros: _r, periodStart: _p, ...b }) => b as BudgetRecord),
    mcpServers: servers,
    integrations: integrations.map((i) => ({ kind: i.kind, config: i.config })),
    integrationSecrets: new Map(integrations.map((i) => [i.kind, i.sealedSettings.length > 0] as const)),
    remembered: new Map(remembered.map((e) => [rememberedKey(e.section, e.name), e])),
    emails,
  };
}
