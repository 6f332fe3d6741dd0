import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { Ledger } from '../ledger/service.js';
import type { AgentActor } from '../agents/index.js';
import { agentsRepo } from '../agents/repo.js';
import type { Store } from '../store/index.js';
import type { MandateRule, TemplateRecord } from './records.js';
import { mandatesRepo } from './repo.js';
import { refuseDuplicates, saveMandateInWrite, withIds, type SaveParts } from './save.js';
import type { MandateInput, TemplateInput } from './schemas.js';

/**
 * Mandates and templates (docs/gate.md#the-gate).
 * Rules:
 * - A mandate is the whole list of an agent's rules; saving replaces it. A rule sent with the id
 *   of one of the agent's current rules keeps that id (and so its period usage); any other rule,
 *   and a second rule sending the same id, gets a fresh id.
 * - 409 confirm_broaden: a rule that allows any merchant or any domain saved beside a narrower
 *   rule (named merchants or domains) for the same agent, unless confirmBroaden is true.
 * - The same rule twice (ids aside) is refused: 400 invalid_mandate naming the repeat.
 * - Members (for agents that act for them) may save only rules that a workspace template holds:
 *   they cannot widen beyond templates. Owners and admins may save any rule.
 * - The plan's mandate allowance counts rules over all of a workspace's live agents: 402
 *   plan_limit_reached past it, checked inside the write (`maxRules` may read the store: it is
 *   awaited there, so its reads are the write's).
 * - Every change is recorded in the ledger with the whole new rule list.
 */
export interface MandateView {
  agentId: string;
  rules: MandateRule[];
  updatedAt: string | null;
  updatedBy: string | null;
}

/**
 * Agents' mandates and the workspace's templates. Reads and writes the `mandates` and `templates`
 * tables (repo.ts); reads agents (a removed agent's rules count no more) and records every change
 * in the ledger, in the same write. Every save refuses the same rule twice (400 invalid_mandate).
 */
export interface Mandates {
  /** An agent's mandate; an agent without one has no rules (and null dates). Reads only. */
  get(wid: string, aid: string): Promise<MandateView>;
  /**
   * Saves an agent's whole rule list, in its own write, under the rules above: members only from
   * templates (403 forbidden), 409 confirm_broaden, 402 plan_limit_reached. Records
   * `mandate.updated`.
   */
  put(wid: string, aid: string, input: MandateInput, who: AgentActor): Promise<MandateView>;
  /** `put` inside a write the caller holds (an agent registered with its mandate). Only inside store.write(). */
  putIn(wid: string, aid: string, input: MandateInput, who: AgentActor): Promise<MandateView>;
  /** A new template (its rules get fresh ids), in its own write; records `template.created`. */
  createTemplate(wid: string, input: TemplateInput, who: AgentActor): Promise<TemplateRecord>;
  /**
   * A template's rules replaced (`svc apply`): a rule kept as it was keeps its id. Agents whose
   * mandates were taken from it keep theirs (a mandate is a copy); whoever applies a workspace
   * file updates those too. Its own write; records `template.updated`; 400 unknown_template.
   */
  updateTemplate(wid: string, id: string, input: TemplateInput, who: AgentActor): Promise<TemplateRecord>;
  /** The rules of the named templates, in order (ids dropped); 400 unknown_template for a missing one. Reads only. */
  rulesOfTemplates(wid: string, templateIds: readonly string[]): Promise<MandateInput['rules']>;
  /** A page of the workspace's templates by id, after `after`; `next` is the last id given. Reads only. */
  templates(
    wid: string,
    options: { after?: string; limit: number },
  ): Promise<{ data: TemplateRecord[]; next: string | null }>;
}

/** The former name of the mandates' contract, kept while other domains move to `Mandates`. */
export type MandatesService = Mandates;

/** What mandates are made from. `maxRules` is the plan's allowance per workspace (null: none); it may read the store. */
export interface MandatesDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  maxRules: (wid: string) => number | null | Promise<number | null>;
}

export function createMandates(deps: MandatesDeps): Mandates {
  const { store, clock, ids, ledger } = deps;
  const repo = mandatesRepo(store);
  // What saving a mandate (save.ts) reads and writes.
  const save: SaveParts = { clock, ids, ledger, maxRules: deps.maxRules, repo, agents: agentsRepo(store) };

  return {
    async get(wid: string, aid: string): Promise<MandateView> {
      const m = await repo.mandate(wid, aid);
      return { agentId: aid, rules: m?.rules ?? [], updatedAt: m?.updatedAt ?? null, updatedBy: m?.updatedBy ?? null };
    },

    async put(wid: string, aid: string, input: MandateInput, who: AgentActor): Promise<MandateView> {
      refuseDuplicates(input.rules);
      return store.write(() => saveMandateInWrite(save, wid, aid, input, who));
    },

    async putIn(wid: string, aid: string, input: MandateInput, who: AgentActor): Promise<MandateView> {
      refuseDuplicates(input.rules);
      return saveMandateInWrite(save, wid, aid, input, who);
    },

    async createTemplate(wid: string, input: TemplateInput, who: AgentActor): Promise<TemplateRecord> {
      refuseDuplicates(input.rules);
      return store.write(async () => {
        const template: TemplateRecord = {
          id: ids.id('tpl'),
          workspaceId: wid,
          name: input.name,
          rules: input.rules.map((r) => ({ ...r, id: ids.id('mnd') })),
          createdAt: isoAt(clock.now()),
        };
        await repo.putTemplate(template);
        await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'template.created',
          subject: template.id,
          data: { name: template.name, rules: template.rules },
        });
        return template;
      });
    },

    async updateTemplate(wid: string, id: string, input: TemplateInput, who: AgentActor): Promise<TemplateRecord> {
      refuseDuplicates(input.rules);
      return store.write(async () => {
        const current = await repo.template(wid, id);
        if (!current) throw new AppError('unknown_template', { message: `No template ${id} in this workspace.` });
        const template: TemplateRecord = {
          ...current,
          name: input.name,
          rules: withIds(input.rules, current.rules, ids),
        };
        await repo.putTemplate(template);
        await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'template.updated',
          subject: template.id,
          data: { name: template.name, rules: template.rules },
        });
        return template;
      });
    },

    async rulesOfTemplates(wid: string, templateIds: readonly string[]): Promise<MandateInput['rules']> {
      const templates = await Promise.all(templateIds.map((id) => repo.template(wid, id)));
      return templateIds.flatMap((id, i) => {
        const template = templates[i];
        if (!template) throw new AppError('unknown_template', { message: `No template ${id} in this workspace.` });
        return template.rules.map(({ id: _id, ...rule }) => rule);
      });
    },

    async templates(
      wid: string,
      options: { after?: string; limit: number },
    ): Promise<{ data: TemplateRecord[]; next: string | null }> {
      const rows = await repo.templates(wid, {
        ...(options.after ? { after: options.after } : {}),
        limit: options.limit + 1,
      });
      const page = rows.slice(0, options.limit);
      return { data: page, next: rows.length > options.limit ? page[page.length - 1]!.id : null };
    },
  };
}
