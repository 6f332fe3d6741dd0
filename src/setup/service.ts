import Joi from 'joi';
import { AppError } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import { canonicalJson } from '../lib/canonical-json.js';
import type { AgentActor } from '../agents/index.js';
import type { MandateRule } from '../mandates/records.js';
import { templateInputSchema } from '../mandates/schemas.js';
import type { BudgetRecord } from '../gateway/records.js';
import { checkDocument, DocumentError, secretRefs, type WorkspaceDocument } from './document.js';
import { planBudgets, planIntegrations, planMcpServers, planOthers } from './plan-resources.js';
import type { SetupResourceRecord } from './records.js';
import { setupRepo } from './repo.js';
import { fileFault, type ApplyInput, type ChangeAction, type SetupDeps, type SetupResult, type Step } from './types.js';

export type { ApplyInput, Change, ChangeAction, SetupDeps, SetupResult } from './types.js';
import { exportDocument } from './export.js';
import { distinctRules, rememberedKey, ruleKey, sameRuleSet, sameSet, type WorkspaceState } from './state.js';

/**
 * `svc apply`: a workspace made to match a file, through the same services (and so the same checks
 * and ledger records) as the console's and the machine routes; `svc export`: the file of a
 * workspace (export.ts).
 * Rules:
 * - A resource is known by its name (a budget by its scope and period, an integration by its
 *   kind). In the file and not in the workspace: created; in both and different: updated, naming
 *   the fields that differ; the same: unchanged, and nothing is written. Applying a file twice
 *   changes nothing the second time (`changed: false`), and writes no ledger record.
 * - A dry run answers the same plan and writes nothing.
 * - In the workspace and not in the file: left alone, and listed as `unmanaged`. With `prune`,
 *   the agents and MCP servers that apply created from a file (never those people made) are
 *   removed instead (`remove`). Templates, blueprints, budgets and integrations are never removed.
 * - Secrets come as values the caller read from its environment (`secrets`, by variable name);
 *   a secret is compared with the one stored, never answered, and the variable's name is kept so
 *   that export writes the same reference back.
 * - Order: templates, blueprints, agents, budgets, MCP servers, integrations, then removals; each
 *   change is its own write, so a failure part-way leaves what came before it applied, and
 *   applying the file again finishes the rest.
 * - An agent's mandate is the rules of its blueprint's templates and its own templates (the file
 *   names no rules for an agent: a token may attach mandates from templates only); with
 *   `manageMandate: false` apply leaves the mandate people set.
 * - One `setup.applied` ledger record sums up an apply that changed something.
 */

export function createSetup(deps: SetupDeps) {
  const { store, clock, ledger, people, agents, mandates, blueprints, budgets, mcp, registry } = deps;
  const repo = setupRepo(store);

  /** Every page of a paged list. */
  const everything = async <T>(
    list: (o: { limit: number; after?: string }) => Promise<{ data: T[]; next: string | null }>,
  ) => {
    const out: T[] = [];
    for (let after: string | undefined; ;) {
      const page = await list({ limit: 200, ...(after ? { after } : {}) });
      out.push(...page.data);
      if (!page.next || page.data.length === 0) return out;
      after = page.next;
    }
  };

  async function readState(wid: string): Promise<WorkspaceState> {
    const [templates, bps, live, budgetRows, servers, integrations, remembered] = await Promise.all([
      everything((o) => mandates.templates(wid, o)),
      everything((o) => blueprints.page(wid, o)),
      agents.list(wid),
      budgets.list(wid),
      mcp.listAll(wid),
      registry.view(wid),
      repo.list(wid),
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

  /** A name the file uses must be unique in the workspace too, or it could mean either. */
  const onlyOne = <T extends { name: string }>(rows: T[], name: string, what: string, field: string): T | undefined => {
    const found = rows.filter((r) => r.name === name);
    if (found.length > 1)
      throw fileFault(
        field,
        `${found.length} ${what} of the workspace are named ${name}: rename all but one in the console`,
      );
    return found[0];
  };

  async function plan(
    wid: string,
    doc: WorkspaceDocument,
    secrets: Record<string, string>,
    who: AgentActor,
    prune: boolean,
  ) {
    const state = await readState(wid);
    const steps: Step[] = [];
    const generated: SetupResult['secrets'] = [];
    const secretOf = (ref: { fromEnv: string } | null | undefined, field: string): string | null => {
      if (!ref) return null;
      const value = secrets[ref.fromEnv];
      if (value === undefined)
        throw new AppError('secret_unset', {
          message: `${field} refers to the environment variable ${ref.fromEnv}, which is not set.`,
          details: { field, fromEnv: ref.fromEnv },
        });
      return value;
    };

    // People by e-mail address (or id), as members of this workspace.
    const personOf = async (ref: string | null | undefined, field: string): Promise<string | null> => {
      if (!ref) return null;
      if (!ref.includes('@')) {
        if (!(await people.me(ref).catch(() => undefined))) throw fileFault(field, `${field} names no person`);
        return ref;
      }
      const id = await people.memberIdByEmail(wid, ref);
      if (!id) throw fileFault(field, `${field}: ${ref} is not a person of this workspace`);
      return id;
    };

    // Templates: their rules as the template route stores them.
    const templateIds = new Map(state.templates.map((x) => [x.name, x.id] as const));
    const templateRules = new Map(state.templates.map((x) => [x.name, x.rules.map(({ id: _id, ...r }) => r)] as const));
    for (const [i, file] of doc.templates.entries()) {
      const rules = [];
      for (const [j, rule] of file.rules.entries()) {
        const approval = rule.approval as { approvers?: string[] } | undefined;
        const approvers = approval?.approvers
          ? await Promise.all(
              approval.approvers.map((p, k) => personOf(p, `templates[${i}].rules[${j}].approval.approvers[${k}]`)),
            )
          : undefined;
        rules.push({
          ...rule,
          ...(approval ? { approval: { ...approval, ...(approvers ? { approvers } : {}) } } : {}),
        });
      }
      const { error, value } = templateInputSchema.validate({ name: file.name, rules }, { abortEarly: false });
      if (error) throw fileFault(`templates[${i}]`, error.message);
      const desired = (value as { rules: Array<Omit<MandateRule, 'id'>> }).rules;
      const current = onlyOne(state.templates, file.name, 'templates', `templates[${i}].name`);
      templateRules.set(file.name, desired);
      if (!current) {
        steps.push({
          section: 'templates',
          name: file.name,
          action: 'create',
          fields: [],
          run: async () => {
            templateIds.set(
              file.name,
              (await mandates.createTemplate(wid, { name: file.name, rules: desired }, who)).id,
            );
          },
          remember: { createdByFile: true },
        });
      } else if (canonicalJson(current.rules.map(ruleKey)) !== canonicalJson(desired.map(ruleKey))) {
        // A rule kept as it was keeps its id.
        const keep = new Map(current.rules.map((r) => [ruleKey(r), r.id]));
        steps.push({
          section: 'templates',
          name: file.name,
          action: 'update',
          fields: ['rules'],
          run: async () => {
            const rules = desired.map((r) => ({
              ...r,
              ...(keep.has(ruleKey(r)) ? { id: keep.get(ruleKey(r))! } : {}),
            }));
            await mandates.updateTemplate(wid, current.id, { name: file.name, rules }, who);
          },
        });
      } else steps.push({ section: 'templates', name: file.name, action: 'unchanged', fields: [] });
    }

    // Blueprints: their templates by name.
    const templateName = new Map(state.templates.map((x) => [x.id, x.name] as const));
    const blueprintIds = new Map(state.blueprints.map((x) => [x.name, x.id] as const));
    const blueprintOf = new Map(
      state.blueprints.map(
        (x) => [x.name, { tags: x.tags, templates: x.templates.map((id) => templateName.get(id) ?? id) }] as const,
      ),
    );
    const templateExists = (name: string, field: string) => {
      if (!templateRules.has(name))
        throw fileFault(field, `${field}: no template ${name} in the file or the workspace`);
    };
    for (const [i, file] of doc.blueprints.entries()) {
      file.templates.forEach((n, k) => templateExists(n, `blueprints[${i}].templates[${k}]`));
      const current = onlyOne(state.blueprints, file.name, 'blueprints', `blueprints[${i}].name`);
      blueprintOf.set(file.name, { tags: file.tags, templates: file.templates });
      const input = () => ({
        name: file.name,
        tags: file.tags,
        templates: file.templates.map((n) => templateIds.get(n)!),
      });
      if (!current) {
        steps.push({
          section: 'blueprints',
          name: file.name,
          action: 'create',
          fields: [],
          run: async () => {
            blueprintIds.set(file.name, (await blueprints.create(wid, input(), who)).id);
          },
          remember: { createdByFile: true },
        });
        continue;
      }
      const fields = [
        ...(sameSet(current.tags, file.tags) ? [] : ['tags']),
        ...(canonicalJson(current.templates.map((id) => templateName.get(id) ?? id)) === canonicalJson(file.templates)
          ? []
          : ['templates']),
      ];
      steps.push({
        section: 'blueprints',
        name: file.name,
        action: fields.length > 0 ? 'update' : 'unchanged',
        fields,
        ...(fields.length > 0
          ? { run: async () => void (await blueprints.update(wid, current.id, input(), who)) }
          : {}),
      });
    }

    // Agents: registered from their blueprint and templates; their mandate kept to those templates' rules.
    const agentIds = new Map(state.agents.map((a) => [a.name, a.id] as const));
    for (const [i, file] of doc.agents.entries()) {
      const at = `agents[${i}]`;
      if (file.blueprint && !blueprintOf.has(file.blueprint))
        throw fileFault(
          `${at}.blueprint`,
          `${at}.blueprint: no blueprint ${file.blueprint} in the file or the workspace`,
        );
      (file.templates ?? []).forEach((n, k) => templateExists(n, `${at}.templates[${k}]`));
      const bp = file.blueprint ? blueprintOf.get(file.blueprint)! : undefined;
      const names = [...(bp?.templates ?? []), ...(file.templates ?? [])];
      const rules = distinctRules(names.flatMap((n) => templateRules.get(n) ?? []));
      const tags = [...new Set([...(bp?.tags ?? []), ...(file.tags ?? [])])];
      const actsFor = await personOf(file.actsFor, `${at}.actsFor`);
      const current = onlyOne(state.agents, file.name, 'agents', `${at}.name`);
      if (!current) {
        steps.push({
          section: 'agents',
          name: file.name,
          action: 'create',
          fields: [],
          run: async () => {
            const agent = await blueprints.register(
              {
                workspaceId: wid,
                name: file.name,
                actsFor,
                tags: file.tags ?? [],
                ...(file.blueprint ? { blueprint: blueprintIds.get(file.blueprint)! } : {}),
                templates: (file.templates ?? []).map((n) => templateIds.get(n)!),
              },
              who,
            );
            agentIds.set(file.name, agent.id);
          },
          remember: { createdByFile: true },
        });
        continue;
      }
      const currentBlueprint = state.blueprints.find((b) => b.id === current.blueprint)?.name ?? null;
      const manage = file.manageMandate !== false;
      const fields = [
        ...(currentBlueprint === (file.blueprint ?? null) ? [] : ['blueprint']),
        ...(sameSet(current.tags, tags) ? [] : ['tags']),
        ...(current.actsFor === actsFor ? [] : ['actsFor']),
        ...(manage && !sameRuleSet(state.mandates.get(current.id) ?? [], rules) ? ['mandate'] : []),
      ];
      steps.push({
        section: 'agents',
        name: file.name,
        action: fields.length > 0 ? 'update' : 'unchanged',
        fields,
        ...(fields.length > 0
          ? {
              run: async () => {
                const change = {
                  ...(fields.includes('tags') ? { tags } : {}),
                  ...(fields.includes('actsFor') ? { actsFor } : {}),
                  ...(fields.includes('blueprint')
                    ? { blueprint: file.blueprint ? blueprintIds.get(file.blueprint)! : null }
                    : {}),
                };
                if (Object.keys(change).length > 0) await agents.update(wid, current.id, change, who);
                if (fields.includes('mandate'))
                  await mandates.put(wid, current.id, { rules, confirmBroaden: true }, who);
              },
            }
          : {}),
      });
    }

    const ctx = { deps, wid, who, doc, state, steps, generated, secretOf, agentIds };
    const budgetsByKey = planBudgets(ctx);
    planMcpServers(ctx);
    await planIntegrations(ctx);
    planOthers(ctx, budgetsByKey, prune);
    return { steps, generated, state };
  }

  async function remember(wid: string, step: Step, state: WorkspaceState): Promise<void> {
    if (step.action === 'remove') {
      await store.write(() => repo.remove(wid, step.section, step.name));
      return;
    }
    if (!step.remember) return;
    const before = state.remembered.get(rememberedKey(step.section, step.name));
    const next: SetupResourceRecord = {
      workspaceId: wid,
      section: step.section,
      name: step.name,
      createdByFile: step.remember.createdByFile ?? before?.createdByFile ?? false,
      secretFromEnv:
        step.remember.secretFromEnv !== undefined ? step.remember.secretFromEnv : (before?.secretFromEnv ?? null),
      updatedAt: isoAt(clock.now()),
    };
    if (before && before.createdByFile === next.createdByFile && before.secretFromEnv === next.secretFromEnv) return;
    await store.write(() => repo.put(next));
  }

  return {
    /**
     * Makes the workspace match the document (or, with `dryRun`, says what that would change).
     * Refuses a document that is not a workspace file (`invalid_workspace_file`, `secret_in_file`)
     * or names a secret's variable that `secrets` lacks (`secret_unset`).
     */
    async apply(wid: string, input: ApplyInput, who: AgentActor): Promise<SetupResult> {
      const doc = checkedOrRefused(input.document);
      const secrets = input.secrets ?? {};
      const missing = secretRefs(doc).filter((r) => secrets[r.fromEnv] === undefined);
      if (missing.length > 0)
        throw new AppError('secret_unset', {
          message: missing
            .map((m) => `${m.field} refers to the environment variable ${m.fromEnv}, which is not set`)
            .join('; '),
          details: { errors: missing.map((m) => ({ field: m.field, message: `${m.fromEnv} is not set` })) },
        });
      const prune = input.prune === true;
      const dryRun = input.dryRun === true;
      const { steps, generated, state } = await plan(wid, doc, secrets, who, prune);
      if (!dryRun) {
        for (const step of steps) {
          if (step.run && step.action !== 'unchanged' && step.action !== 'unmanaged') await step.run();
          await remember(wid, step, state);
        }
      }
      const summary: Record<ChangeAction, number> = { create: 0, update: 0, unchanged: 0, remove: 0, unmanaged: 0 };
      for (const s of steps) summary[s.action] += 1;
      const changed = summary.create + summary.update + summary.remove > 0;
      if (changed && !dryRun) {
        await store.write(() =>
          ledger.record({
            workspaceId: wid,
            actor: who.actor,
            ...(who.tokenId ? { tokenId: who.tokenId } : {}),
            kind: 'setup.applied',
            subject: wid,
            data: { create: summary.create, update: summary.update, remove: summary.remove, prune },
          }),
        );
      }
      return {
        dryRun,
        prune,
        changed,
        summary,
        changes: steps.map(({ section, name, action, fields }) => ({ section, name, action, fields })),
        secrets: generated,
      };
    },

    /** The workspace as a file: names instead of ids, secrets as references to variables. */
    async export(wid: string): Promise<WorkspaceDocument> {
      return exportDocument(await readState(wid));
    },
  };
}

export type Setup = ReturnType<typeof createSetup>;

/** The document checked, or the file's refusal as an error of the catalogue (with each problem's path). */
function checkedOrRefused(document: unknown): WorkspaceDocument {
  try {
    return checkDocument(document);
  } catch (err) {
    if (err instanceof DocumentError)
      throw new AppError(err.type, {
        details: { errors: err.errors.map((e) => ({ field: e.field, message: e.message })) },
      });
    throw err;
  }
}

/** The body of `POST /v1/admin/setup`. */
export const applyBodySchema = Joi.object({
  document: Joi.object().unknown(true).required(),
  secrets: Joi.object()
    .pattern(/^[A-Za-z_][A-Za-z0-9_]*$/, Joi.string().max(4096))
    .max(100),
  dryRun: Joi.boolean(),
  prune: Joi.boolean(),
});
