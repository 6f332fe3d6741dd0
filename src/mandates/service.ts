import { isDeepStrictEqual } from 'node:util';
import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { tokenOf, type Ledger } from '../ledger/service.js';
import type { AgentActor } from '../agents/index.js';
import { agentsRepo } from '../agents/repo.js';
import type { Store } from '../store/index.js';
import type { MandateRecord, MandateRule, TemplateRecord } from './records.js';
import { canonicalJson } from '../lib/canonical-json.js';
import { mandatesRepo } from './repo.js';
import { duplicateRules, type MandateInput, type TemplateInput } from './schemas.js';

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

/** Each current id is kept at most once (by the first rule sending it): ids stay unique. */
function withIds(rules: MandateInput['rules'], current: readonly MandateRule[], ids: IdSource): MandateRule[] {
  const known = new Set(current.map((r) => r.id));
  return rules.map((r) => {
    if (r.id && known.delete(r.id)) return { ...r, id: r.id };
    return { ...r, id: ids.id('mnd') };
  });
}

const anywhere = (r: MandateRule) => r.merchants?.includes('*') || r.domains?.includes('*');
const narrow = (r: MandateRule) =>
  (r.merchants && !r.merchants.includes('*')) || (r.domains && !r.domains.includes('*'));
const withoutId = ({ id: _id, ...rest }: MandateRule | (Omit<MandateRule, 'id'> & { id?: string })) => rest;

function refuseDuplicates(rules: MandateInput['rules']): void {
  const errors = duplicateRules(rules as unknown as Array<Record<string, unknown>>, canonicalJson);
  if (errors.length > 0) throw new AppError('invalid_mandate', { details: { errors } });
}

export function createMandatesService(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  maxRules: (wid: string) => number | null | Promise<number | null>;
}) {
  const { store, clock, ids, ledger } = deps;
  const repo = mandatesRepo(store);
  const agents = agentsRepo(store);

  // Rules of live agents only: a removed agent's mandate can no longer be changed, nor used.
  const rulesInWorkspace = async (wid: string, exceptAgent: string): Promise<number> => {
    const others = (await repo.inWorkspace(wid)).filter((m) => m.agentId !== exceptAgent);
    const live = await Promise.all(others.map(async (m) => !(await agents.get(wid, m.agentId))?.removedAt));
    return others.reduce((n, m, i) => n + (live[i] ? m.mandate.rules.length : 0), 0);
  };

  const putIn = async (wid: string, aid: string, input: MandateInput, who: AgentActor): Promise<MandateView> => {
    const current = await repo.rules(wid, aid);
    const rules = withIds(input.rules, current, ids);
    if (who.role === 'member') {
      const allowed = (await repo.templates(wid)).flatMap((template) => template.rules.map(withoutId));
      const beyond = rules.find((r) => !allowed.some((a) => isDeepStrictEqual(a, withoutId(r))));
      if (beyond) {
        throw new AppError('forbidden', {
          message:
            'Members may only give an agent rules from the workspace templates; an owner or admin may save other rules.',
          fix: 'Copy the rules of a template unchanged, or ask an owner or admin.',
        });
      }
    }
    const broad = rules.find(anywhere);
    const narrower = rules.find((r) => r !== broad && narrow(r));
    if (broad && narrower && !input.confirmBroaden) {
      throw new AppError('confirm_broaden', {
        details: {
          reason: `Rule ${broad.id} allows ${broad.merchants?.includes('*') ? 'any merchant' : 'any domain'} beside rule ${narrower.id}, which allows only ${[...(narrower.merchants ?? []), ...(narrower.domains ?? [])].join(', ')}: the narrower rule would no longer limit anything.`,
        },
      });
    }
    const maxRules = await deps.maxRules(wid);
    if (maxRules !== null && (await rulesInWorkspace(wid, aid)) + rules.length > maxRules) {
      throw new AppError('plan_limit_reached', {
        message: `The plan allows ${maxRules} mandate rules in a workspace; this mandate would pass it.`,
        fix: 'Remove rules you no longer use, or raise plan.mandateRules in the configuration.',
      });
    }
    const record: MandateRecord = {
      workspaceId: wid,
      agentId: aid,
      rules,
      updatedAt: isoAt(clock.now()),
      updatedBy: who.actor,
    };
    await repo.put(record);
    await ledger.record({
      workspaceId: wid,
      actor: who.actor,
      ...tokenOf(who),
      kind: 'mandate.updated',
      subject: aid,
      data: { rules, confirmBroaden: input.confirmBroaden },
    });
    return { agentId: aid, rules, updatedAt: record.updatedAt, updatedBy: record.updatedBy };
  };

  return {
    async get(wid: string, aid: string): Promise<MandateView> {
      const m = await repo.mandate(wid, aid);
      return { agentId: aid, rules: m?.rules ?? [], updatedAt: m?.updatedAt ?? null, updatedBy: m?.updatedBy ?? null };
    },

    async put(wid: string, aid: string, input: MandateInput, who: AgentActor): Promise<MandateView> {
      refuseDuplicates(input.rules);
      return store.write(() => putIn(wid, aid, input, who));
    },

    /** Saving a mandate inside a write the caller holds (an agent registered with its mandate). */
    async putIn(wid: string, aid: string, input: MandateInput, who: AgentActor): Promise<MandateView> {
      refuseDuplicates(input.rules);
      return putIn(wid, aid, input, who);
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

    /**
     * A template's rules replaced (`svc apply`): a rule kept as it was keeps its id. Agents whose
     * mandates were taken from it keep theirs (a mandate is a copy); whoever applies a workspace
     * file updates those too. A ledger record, as creating one is.
     */
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

    /** The rules of the named templates, in order (ids dropped); 400 unknown_template for a missing one. */
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

export type MandatesService = ReturnType<typeof createMandatesService>;
