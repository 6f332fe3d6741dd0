import { canonicalJson } from '../lib/canonical-json.js';
import type { MandateRule } from '../mandates/records.js';
import { templateInputSchema } from '../mandates/schemas.js';
import type { PlanContext } from './plan-resources.js';
import { distinctRules, ruleKey, sameRuleSet, sameSet } from './state.js';
import { fileFault } from './types.js';

/**
 * The plan's first half (plan-resources.ts has the rest): templates, blueprints and agents, which
 * refer to each other by name. Each adds its steps to the context's list, and fills in the names
 * the next section refers to (ids are filled in as the steps run).
 */

type Rule = Omit<MandateRule, 'id'>;

export interface DefinitionsContext extends PlanContext {
  /** Templates by name: their ids, and their rules as the file or the workspace has them. */
  templateIds: Map<string, string>;
  templateRules: Map<string, Rule[]>;
  /** Blueprints by name: their ids, and their tags and templates (by name). */
  blueprintIds: Map<string, string>;
  blueprintOf: Map<string, { tags: string[]; templates: string[] }>;
  /** A person named by e-mail address (or id), as a member of this workspace; null for none. */
  personOf(ref: string | null | undefined, field: string): Promise<string | null>;
}

/** The names of the workspace, before the file's sections add theirs. */
export function workspaceNames(ctx: PlanContext) {
  const { state } = ctx;
  const templateName = new Map(state.templates.map((x) => [x.id, x.name] as const));
  return {
    templateIds: new Map(state.templates.map((x) => [x.name, x.id] as const)),
    templateRules: new Map(state.templates.map((x) => [x.name, x.rules.map(({ id: _id, ...r }) => r)] as const)),
    blueprintIds: new Map(state.blueprints.map((x) => [x.name, x.id] as const)),
    blueprintOf: new Map(
      state.blueprints.map(
        (x) => [x.name, { tags: x.tags, templates: x.templates.map((id) => templateName.get(id) ?? id) }] as const,
      ),
    ),
  };
}

/** A name the file uses must be unique in the workspace too, or it could mean either. */
export function onlyOne<T extends { name: string }>(
  rows: T[],
  name: string,
  what: string,
  field: string,
): T | undefined {
  const found = rows.filter((r) => r.name === name);
  if (found.length > 1)
    throw fileFault(
      field,
      `${found.length} ${what} of the workspace are named ${name}: rename all but one in the console`,
    );
  return found[0];
}

/** Templates: their rules as the template route stores them (approvers named by e-mail address become ids). */
export async function planTemplates(ctx: DefinitionsContext): Promise<void> {
  const { deps, wid, who, doc, state, steps, templateIds, templateRules, personOf } = ctx;
  const { mandates } = deps;
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
    const desired = (value as { rules: Rule[] }).rules;
    const current = onlyOne(state.templates, file.name, 'templates', `templates[${i}].name`);
    templateRules.set(file.name, desired);
    if (!current) {
      steps.push({
        section: 'templates',
        name: file.name,
        action: 'create',
        fields: [],
        run: async () => {
          templateIds.set(file.name, (await mandates.createTemplate(wid, { name: file.name, rules: desired }, who)).id);
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
}

/** A template a blueprint or an agent names must be in the file or the workspace. */
function templateExists(ctx: DefinitionsContext, name: string, field: string): void {
  if (!ctx.templateRules.has(name))
    throw fileFault(field, `${field}: no template ${name} in the file or the workspace`);
}

/** Blueprints: their templates by name. */
export function planBlueprints(ctx: DefinitionsContext): void {
  const { deps, wid, who, doc, state, steps, templateIds, blueprintIds, blueprintOf } = ctx;
  const { blueprints } = deps;
  const templateName = new Map(state.templates.map((x) => [x.id, x.name] as const));
  for (const [i, file] of doc.blueprints.entries()) {
    file.templates.forEach((n, k) => templateExists(ctx, n, `blueprints[${i}].templates[${k}]`));
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
      ...(fields.length > 0 ? { run: async () => void (await blueprints.update(wid, current.id, input(), who)) } : {}),
    });
  }
}

/** Agents: registered from their blueprint and templates; their mandate kept to those templates' rules. */
export async function planAgents(ctx: DefinitionsContext): Promise<void> {
  const { deps, wid, who, doc, state, steps, agentIds, templateIds, templateRules, blueprintIds, blueprintOf } = ctx;
  const { agents, mandates, blueprints } = deps;
  for (const [i, file] of doc.agents.entries()) {
    const at = `agents[${i}]`;
    if (file.blueprint && !blueprintOf.has(file.blueprint))
      throw fileFault(
        `${at}.blueprint`,
        `${at}.blueprint: no blueprint ${file.blueprint} in the file or the workspace`,
      );
    (file.templates ?? []).forEach((n, k) => templateExists(ctx, n, `${at}.templates[${k}]`));
    const bp = file.blueprint ? blueprintOf.get(file.blueprint)! : undefined;
    const names = [...(bp?.templates ?? []), ...(file.templates ?? [])];
    const rules = distinctRules(names.flatMap((n) => templateRules.get(n) ?? []));
    const tags = [...new Set([...(bp?.tags ?? []), ...(file.tags ?? [])])];
    const actsFor = await ctx.personOf(file.actsFor, `${at}.actsFor`);
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
    const run = async () => {
      const change = {
        ...(fields.includes('tags') ? { tags } : {}),
        ...(fields.includes('actsFor') ? { actsFor } : {}),
        ...(fields.includes('blueprint')
          ? { blueprint: file.blueprint ? blueprintIds.get(file.blueprint)! : null }
          : {}),
      };
      if (Object.keys(change).length > 0) await agents.update(wid, current.id, change, who);
      if (fields.includes('mandate')) await mandates.put(wid, current.id, { rules, confirmBroaden: true }, who);
    };
    steps.push({
      section: 'agents',
      name: file.name,
      action: fields.length > 0 ? 'update' : 'unchanged',
      fields,
      ...(fields.length > 0 ? { run } : {}),
    });
  }
}
