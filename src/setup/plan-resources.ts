import { AppError } from '../errors/app-error.js';
import { canonicalJson } from '../lib/canonical-json.js';
import type { AgentActor } from '../agents/index.js';
import type { BudgetRecord } from '../gateway/records.js';
import { budgetSchema } from '../gateway/schemas.js';
import { gatewayRepo } from '../gateway/repo.js';
import type { IntegrationKind } from '../integrations/records.js';
import { budgetKey, type FileBudget, type Section, type WorkspaceDocument } from './document.js';
import { rememberedKey, type WorkspaceState } from './state.js';
import { fileFault, GENERATED, GIVEN, REMOVABLE, type SetupDeps, type SetupResult, type Step } from './types.js';

/**
 * The plan's second half (plan-definitions.ts has templates, blueprints and agents): budgets, MCP servers and integrations, and what
 * the workspace has that the file does not. Each adds its steps to the context's list.
 */
export interface PlanContext {
  deps: SetupDeps;
  wid: string;
  who: AgentActor;
  doc: WorkspaceDocument;
  state: WorkspaceState;
  steps: Step[];
  generated: SetupResult['secrets'];
  /** A secret's value from the caller's variables (secret_unset when missing). */
  secretOf: (ref: { fromEnv: string } | null | undefined, field: string) => string | null;
  /**
   * Whether a secret the file gives is compared with the stored one (an apply, or a plan for a
   * caller who may apply); else it is listed as a change, so that a plan confirms no guess.
   */
  compareSecrets: boolean;
  /** Agents by name, filled in as the plan's agents are created. */
  agentIds: Map<string, string>;
}

/** Budgets: by scope and period; an agent's by the agent's name. Answers the workspace's budgets by that key. */
export function planBudgets(ctx: PlanContext): Map<string, BudgetRecord> {
  const { deps, wid, who, doc, state, steps, agentIds } = ctx;
  const { budgets } = deps;
  const updateBudget = (
    w: string,
    current: BudgetRecord,
    change: Pick<BudgetRecord, 'amountMicros' | 'ladder'>,
    by: AgentActor,
  ) => updateBudgetIn(deps, w, current, change, by);
  const agentName = new Map(state.agents.map((a) => [a.id, a.name] as const));
  const fileKeyOf = (b: BudgetRecord): string | null => {
    if (b.scope.kind === 'workspace') return budgetKey({ scope: { kind: 'workspace' }, period: b.period });
    if (b.scope.kind === 'agent') {
      const n = agentName.get(b.scope.id);
      return n === undefined ? null : budgetKey({ scope: { kind: 'agent', agent: n }, period: b.period });
    }
    return budgetKey({ scope: { kind: b.scope.kind, id: b.scope.id }, period: b.period });
  };
  const budgetsByKey = new Map<string, BudgetRecord>();
  for (const b of state.budgets) {
    const k = fileKeyOf(b);
    if (k !== null && !budgetsByKey.has(k)) budgetsByKey.set(k, b);
  }
  const agentNames = new Set([...state.agents.map((a) => a.name), ...doc.agents.map((a) => a.name)]);
  const scopeName = (b: FileBudget) => budgetKey(b);
  for (const [i, file] of doc.budgets.entries()) {
    const scope = file.scope as { kind: BudgetRecord['scope']['kind']; agent?: string; id?: string };
    if (scope.kind === 'agent' && !agentNames.has(scope.agent!))
      throw fileFault(
        `budgets[${i}].scope.agent`,
        `budgets[${i}].scope.agent: no agent ${scope.agent} in the file or the workspace`,
      );
    const idOf = () =>
      scope.kind === 'workspace' ? wid : scope.kind === 'agent' ? agentIds.get(scope.agent!)! : scope.id!;
    const normalized = budgetSchema.validate(
      {
        scope: { kind: scope.kind, id: scope.kind === 'agent' ? 'agt_' : (scope.id ?? wid) },
        amountMicros: file.amountMicros,
        period: file.period,
        ...(file.ladder ? { ladder: file.ladder } : {}),
      },
      { abortEarly: false },
    );
    if (normalized.error) throw fileFault(`budgets[${i}]`, normalized.error.message);
    const desired = normalized.value as Pick<BudgetRecord, 'amountMicros' | 'period' | 'ladder'>;
    const current = budgetsByKey.get(budgetKey(file));
    if (!current) {
      steps.push({
        section: 'budgets',
        name: scopeName(file),
        action: 'create',
        fields: [],
        run: async () =>
          void (await budgets.create(
            wid,
            {
              scope: { kind: scope.kind, id: idOf() },
              amountMicros: desired.amountMicros,
              period: desired.period,
              ladder: desired.ladder,
            },
            who.actor,
          )),
        remember: { createdByFile: true },
      });
      continue;
    }
    const fields = [
      ...(current.amountMicros === desired.amountMicros ? [] : ['amountMicros']),
      ...(canonicalJson(current.ladder) === canonicalJson(desired.ladder) ? [] : ['ladder']),
    ];
    steps.push({
      section: 'budgets',
      name: scopeName(file),
      action: fields.length > 0 ? 'update' : 'unchanged',
      fields,
      ...(fields.length > 0
        ? {
            run: () => updateBudget(wid, current, { amountMicros: desired.amountMicros, ladder: desired.ladder }, who),
          }
        : {}),
    });
  }

  return budgetsByKey;
}

/** MCP servers (remote ones: a local one is the configuration's). */
export function planMcpServers(ctx: PlanContext): void {
  const { deps, wid, who, doc, state, steps, secretOf } = ctx;
  const { mcp } = deps;
  for (const [i, file] of doc.mcpServers.entries()) {
    const current = state.mcpServers.find((s) => s.name === file.name);
    if (current?.kind === 'local')
      throw fileFault(
        `mcpServers[${i}].name`,
        `mcpServers[${i}].name: ${file.name} is a local server of the configuration (mcp.localServers)`,
      );
    const secret = secretOf(file.secret, `mcpServers[${i}].secret`);
    const input = {
      url: file.url,
      secret,
      allowTools: file.allowTools ?? null,
      unprefixed: file.unprefixed ?? false,
    };
    const remember = { secretFromEnv: file.secret?.fromEnv ?? null };
    if (!current) {
      steps.push({
        section: 'mcpServers',
        name: file.name,
        action: 'create',
        fields: [],
        run: async () => void (await mcp.add(wid, { name: file.name, ...input }, who.actor)),
        remember: { ...remember, createdByFile: true },
      });
      continue;
    }
    const fields = [
      ...(current.url === input.url ? [] : ['url']),
      ...((secret !== null && !ctx.compareSecrets) || !mcp.secretIs(current, secret) ? ['secret'] : []),
      ...(canonicalJson(current.allowTools) === canonicalJson(input.allowTools) ? [] : ['allowTools']),
      ...(current.unprefixed === input.unprefixed ? [] : ['unprefixed']),
    ];
    const change = Object.fromEntries(fields.map((f) => [f, input[f as keyof typeof input]]));
    steps.push({
      section: 'mcpServers',
      name: file.name,
      action: fields.length > 0 ? 'update' : 'unchanged',
      fields,
      ...(fields.length > 0 ? { run: async () => void (await mcp.update(wid, file.name, change, who.actor)) } : {}),
      remember,
    });
  }
}

/** Integrations, by kind. */
export async function planIntegrations(ctx: PlanContext): Promise<void> {
  const { deps, wid, who, doc, state, steps, secretOf, generated } = ctx;
  const { registry } = deps;
  for (const kind of Object.keys(doc.integrations) as IntegrationKind[]) {
    const file = (doc.integrations as Record<string, Record<string, unknown>>)[kind]!;
    const current = state.integrations.find((x) => x.kind === kind);
    const at = `integrations.${kind}`;
    const ref = (kind === 'github' ? file.token : file.signingSecret) as { fromEnv: string } | null | undefined;
    const field = kind === 'github' ? 'token' : 'signingSecret';
    const secret = secretOf(ref, `${at}.${field}`);
    const config: Record<string, unknown> =
      kind === 'ssf'
        ? { jwksUri: null, jwks: null, ...file }
        : Object.fromEntries(Object.entries(file).filter(([k]) => k !== 'token' && k !== 'signingSecret'));
    const fields = current
      ? [
          ...Object.keys(config).filter(
            (k) => canonicalJson(current.config[k] ?? null) !== canonicalJson(config[k] ?? null),
          ),
          ...((kind === 'github' || GIVEN.has(kind)) && (await secretChanged(ctx, kind, secret)) ? [field] : []),
        ]
      : [];
    const input = {
      ...(Object.keys(config).length > 0 ? { config } : {}),
      ...(kind === 'github' && (!current || fields.includes('token')) ? { configSecrets: { token: secret } } : {}),
      ...(GIVEN.has(kind) && secret ? { signingSecret: secret } : {}),
    };
    const remember = { secretFromEnv: ref?.fromEnv ?? null };
    if (current && fields.length === 0) {
      steps.push({ section: 'integrations', name: kind, action: 'unchanged', fields: [], remember });
      continue;
    }
    steps.push({
      section: 'integrations',
      name: kind,
      action: current ? 'update' : 'create',
      fields,
      run: async () => {
        // A generated kind set up already changes its settings without a new secret.
        const answer = await registry.configure(
          wid,
          kind,
          GENERATED.has(kind) && current ? { config: input.config ?? {}, ...input } : input,
          who.actor,
        );
        if (answer.secret) generated.push({ integration: kind, secret: answer.secret });
      },
      remember: current ? remember : { ...remember, createdByFile: true },
    });
  }
}

/** What the workspace has and the file does not: left alone, or with `prune` removed when a file created it. */
export function planOthers(ctx: PlanContext, budgetsByKey: Map<string, BudgetRecord>, prune: boolean): void {
  const { deps, wid, who, state, steps } = ctx;
  const { agents, mcp } = deps;
  const named = (section: Section) => new Set(steps.filter((s) => s.section === section).map((s) => s.name));
  const others: Array<{ section: Section; name: string; remove?: () => Promise<void> }> = [
    ...state.templates
      .filter((x) => !named('templates').has(x.name))
      .map((x) => ({ section: 'templates' as const, name: x.name })),
    ...state.blueprints
      .filter((x) => !named('blueprints').has(x.name))
      .map((x) => ({ section: 'blueprints' as const, name: x.name })),
    ...state.agents
      .filter((x) => !named('agents').has(x.name))
      .map((x) => ({
        section: 'agents' as const,
        name: x.name,
        remove: async () => void (await agents.remove(wid, x.id, who)),
      })),
    ...[...budgetsByKey.keys()]
      .filter((k) => !named('budgets').has(k))
      .map((k) => ({ section: 'budgets' as const, name: k })),
    ...state.mcpServers
      .filter((x) => x.kind !== 'local' && !named('mcpServers').has(x.name))
      .map((x) => ({
        section: 'mcpServers' as const,
        name: x.name,
        remove: () => mcp.remove(wid, x.name, who.actor),
      })),
    ...state.integrations
      .filter((x) => !named('integrations').has(x.kind))
      .map((x) => ({ section: 'integrations' as const, name: x.kind })),
  ];
  for (const o of others) {
    const byFile = state.remembered.get(rememberedKey(o.section, o.name))?.createdByFile === true;
    if (prune && byFile && o.remove && REMOVABLE.includes(o.section))
      steps.push({ section: o.section, name: o.name, action: 'remove', fields: [], run: o.remove });
    else steps.push({ section: o.section, name: o.name, action: 'unmanaged', fields: [] });
  }
}

/** A budget's amount or ladder changed in place (its spend this period stays); a ledger record. */
async function updateBudgetIn(
  { store, ledger }: Pick<SetupDeps, 'store' | 'ledger'>,
  wid: string,
  current: BudgetRecord,
  change: Pick<BudgetRecord, 'amountMicros' | 'ladder'>,
  who: AgentActor,
): Promise<void> {
  await store.write(async () => {
    const budgetsRepo = gatewayRepo(store);
    const found = (await budgetsRepo.budgets(wid)).find((b) => b.id === current.id);
    if (!found) throw new AppError('not_found', { message: `Budget ${current.id} was removed meanwhile.` });
    await budgetsRepo.putBudget({ ...found, ...change });
    await ledger.record({
      workspaceId: wid,
      actor: who.actor,
      kind: 'budget.updated',
      subject: found.id,
      data: { scope: found.scope, period: found.period, amountMicros: change.amountMicros, ladder: change.ladder },
    });
  });
}

/**
 * Whether an integration's secret (GitHub's token, or the signing secret of a kind the provider
 * gives) differs from the stored one; one the file gives counts as changed, uncompared, in a plan
 * for a caller who may not apply it.
 */
async function secretChanged(ctx: PlanContext, kind: IntegrationKind, secret: string | null): Promise<boolean> {
  if (secret !== null && !ctx.compareSecrets) return true;
  const { registry } = ctx.deps;
  if (kind === 'github') return ((await registry.configSecret(ctx.wid, 'github', 'token')) ?? null) !== secret;
  return (await registry.secretsFor(ctx.wid, kind))[0] !== secret;
}
