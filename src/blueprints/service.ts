import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { Ledger } from '../ledger/service.js';
import { canonicalJson } from '../lib/canonical-json.js';
import { AppError, invalidField } from '../errors/app-error.js';
import type { AgentActor, AgentsService } from '../agents/index.js';
import type { MandatesService } from '../mandates/index.js';
import type { PeopleService } from '../people/index.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { BlueprintRecord } from './records.js';
import { blueprintsRepo } from './repo.js';
import type { BlueprintInput, Registration } from './schemas.js';

/**
 * Blueprints, and agents registered with a mandate taken from templates.
 * Rules:
 * - A blueprint names tags and templates of its own workspace; naming a template that does not
 *   exist there is `400 unknown_template`. Owners and admins create blueprints.
 * - Registering is one transaction: the agent (the blueprint's tags, then any given, once each)
 *   and its mandate (the rules of the blueprint's templates, then of any templates named in the
 *   request, in order; a rule repeated across templates is kept once). Both land or neither.
 * - The mandate is exactly what people wrote in templates; a service token can add nothing else
 *   (its route refuses `mandate` and `rules` with `400 template_only`). Combining templates is
 *   taken as confirmed broadening: the people who wrote them chose their scope.
 * - With no template at all the agent has no mandate, so every action it asks is denied.
 * - `actsFor` names a person of the workspace by id or by e-mail address.
 * - Every blueprint and every registration is a ledger record under its actor (a token with its id).
 */
export function createBlueprintsService(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  agents: AgentsService;
  mandates: MandatesService;
  people: Pick<PeopleService, 'memberIdByEmail'>;
}): BlueprintsService {
  const { store, clock, ids, ledger, agents, mandates, people } = deps;
  const repo = blueprintsRepo(store);

  const blueprintOf = async (wid: string, id: string): Promise<BlueprintRecord> => {
    const found = await repo.get(wid, id);
    if (!found) throw new AppError('unknown_template', { message: `No blueprint ${id} in this workspace.` });
    return found;
  };

  /** A person named by id stays as is (createIn checks it); by e-mail, their id in this workspace. */
  const personOf = async (wid: string, actsFor: string | null | undefined): Promise<string | null> => {
    if (!actsFor?.includes('@')) return actsFor ?? null;
    const id = await people.memberIdByEmail(wid, actsFor);
    if (!id) throw invalidField('actsFor', '"actsFor" names no person of this workspace');
    return id;
  };

  /** The rules of the named templates, in order, each distinct rule once. */
  const rulesOf = async (wid: string, templateIds: readonly string[]) => {
    const seen = new Set<string>();
    return (await mandates.rulesOfTemplates(wid, templateIds)).filter((rule) => {
      const key = canonicalJson(rule);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  };

  return {
    async create(wid: string, input: BlueprintInput, who: AgentActor): Promise<BlueprintRecord> {
      return store.write(async () => {
        await rulesOf(wid, input.templates);
        const blueprint: BlueprintRecord = {
          id: ids.id('bp'),
          workspaceId: wid,
          name: input.name,
          tags: input.tags,
          templates: input.templates,
          createdAt: isoAt(clock.now()),
          createdBy: who.actor,
        };
        await repo.put(blueprint);
        await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'blueprint.created',
          subject: blueprint.id,
          data: { name: blueprint.name, tags: blueprint.tags, templates: blueprint.templates },
        });
        return blueprint;
      });
    },

    /** A blueprint's tags and templates replaced (`svc apply`); agents registered from it keep theirs. */
    async update(wid: string, id: string, input: BlueprintInput, who: AgentActor): Promise<BlueprintRecord> {
      return store.write(async () => {
        const current = await blueprintOf(wid, id);
        await rulesOf(wid, input.templates);
        const blueprint: BlueprintRecord = {
          ...current,
          name: input.name,
          tags: input.tags,
          templates: input.templates,
        };
        await repo.put(blueprint);
        await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          kind: 'blueprint.updated',
          subject: blueprint.id,
          data: { name: blueprint.name, tags: blueprint.tags, templates: blueprint.templates },
        });
        return blueprint;
      });
    },

    async page(
      wid: string,
      options: { after?: string; limit: number },
    ): Promise<{ data: BlueprintRecord[]; next: string | null }> {
      const rows = await repo.list(wid, {
        ...(options.after ? { after: options.after } : {}),
        limit: options.limit + 1,
      });
      const page = rows.slice(0, options.limit);
      return { data: page, next: rows.length > options.limit ? page[page.length - 1]!.id : null };
    },

    /** An agent with its mandate from templates (a blueprint's, then the named ones), in one write. */
    async register(input: Registration, who: AgentActor): Promise<AgentRecord & { mandateRules: number }> {
      return store.write(async () => {
        const blueprint = input.blueprint ? await blueprintOf(input.workspaceId, input.blueprint) : undefined;
        const rules = await rulesOf(input.workspaceId, [...(blueprint?.templates ?? []), ...(input.templates ?? [])]);
        const tags = [...new Set([...(blueprint?.tags ?? []), ...(input.tags ?? [])])];
        const agent = await agents.createIn(
          {
            workspaceId: input.workspaceId,
            name: input.name,
            actsFor: await personOf(input.workspaceId, input.actsFor),
            tags,
            blueprint: blueprint?.id ?? null,
          },
          who,
        );
        if (rules.length > 0) await mandates.putIn(input.workspaceId, agent.id, { rules, confirmBroaden: true }, who);
        return { ...agent, mandateRules: rules.length };
      });
    },
  };
}

/**
 * Agent blueprints: named sets of tags and mandate templates that agents are registered from.
 * Writes the `blueprints` table; registering writes the agent and its mandate through the agents
 * and mandates services, in one write, each change a ledger record.
 */
export interface BlueprintsService {
  /** A new blueprint; 400 when it names a template the workspace lacks. */
  create(wid: string, input: BlueprintInput, who: AgentActor): Promise<BlueprintRecord>;
  /** A blueprint's tags and templates replaced (`svc apply`); agents registered from it keep theirs. */
  update(wid: string, id: string, input: BlueprintInput, who: AgentActor): Promise<BlueprintRecord>;
  /** The workspace's blueprints, a page at a time. */
  page(
    wid: string,
    options: { after?: string; limit: number },
  ): Promise<{ data: BlueprintRecord[]; next: string | null }>;
  /** An agent with its mandate from templates (a blueprint's, then the named ones), in one write. */
  register(input: Registration, who: AgentActor): Promise<AgentRecord & { mandateRules: number }>;
}
