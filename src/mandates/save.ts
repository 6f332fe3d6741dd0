import { isDeepStrictEqual } from 'node:util';
import type { AgentActor } from '../agents/index.js';
import type { AgentRecord } from '../agents/records.js';
import { AppError } from '../errors/app-error.js';
import { canonicalJson } from '../lib/canonical-json.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { tokenOf, type Ledger } from '../ledger/service.js';
import type { MandateRecord, MandateRule } from './records.js';
import type { MandatesRepo } from './repo.js';
import { duplicateRules, type MandateInput } from './schemas.js';
import type { MandateView } from './service.js';

/**
 * Saving an agent's mandate (its whole rule list), inside a write: the rule ids kept, then the
 * checks in order (members only from templates, a broadening confirmed, the plan's allowance),
 * then the record and its `mandate.updated` ledger record. The rules are service.ts's.
 */

/** What a save reads and writes. */
export interface SaveParts {
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  maxRules: (wid: string) => number | null | Promise<number | null>;
  repo: MandatesRepo;
  /** The agents' records, read for whether an agent was removed. */
  agents: { get(wid: string, aid: string): Promise<AgentRecord | undefined> };
}

/** Each current id is kept at most once (by the first rule sending it): ids stay unique. */
export function withIds(rules: MandateInput['rules'], current: readonly MandateRule[], ids: IdSource): MandateRule[] {
  const known = new Set(current.map((r) => r.id));
  return rules.map((r) => {
    if (r.id && known.delete(r.id)) return { ...r, id: r.id };
    return { ...r, id: ids.id('mnd') };
  });
}

/** The same rule twice (ids aside): 400 invalid_mandate naming the repeat. */
export function refuseDuplicates(rules: MandateInput['rules']): void {
  const errors = duplicateRules(rules as unknown as Array<Record<string, unknown>>, canonicalJson);
  if (errors.length > 0) throw new AppError('invalid_mandate', { details: { errors } });
}

const anywhere = (r: MandateRule) => r.merchants?.includes('*') || r.domains?.includes('*');
const narrow = (r: MandateRule) =>
  (r.merchants && !r.merchants.includes('*')) || (r.domains && !r.domains.includes('*'));
const withoutId = ({ id: _id, ...rest }: MandateRule | (Omit<MandateRule, 'id'> & { id?: string })) => rest;

/** A member may save only rules a workspace template holds, unchanged: 403 forbidden otherwise. */
async function memberRulesFromTemplates(
  parts: SaveParts,
  wid: string,
  rules: readonly MandateRule[],
  who: AgentActor,
): Promise<void> {
  if (who.role !== 'member') return;
  const allowed = (await parts.repo.templates(wid)).flatMap((template) => template.rules.map(withoutId));
  const beyond = rules.find((r) => !allowed.some((a) => isDeepStrictEqual(a, withoutId(r))));
  if (beyond) {
    throw new AppError('forbidden', {
      message:
        'Members may only give an agent rules from the workspace templates; an owner or admin may save other rules.',
      fix: 'Copy the rules of a template unchanged, or ask an owner or admin.',
    });
  }
}

/** A rule allowing any merchant or domain beside a narrower one: 409 confirm_broaden unless confirmed. */
function broadeningConfirmed(rules: readonly MandateRule[], input: MandateInput): void {
  const broad = rules.find(anywhere);
  const narrower = rules.find((r) => r !== broad && narrow(r));
  if (broad && narrower && !input.confirmBroaden) {
    throw new AppError('confirm_broaden', {
      details: {
        reason: `Rule ${broad.id} allows ${broad.merchants?.includes('*') ? 'any merchant' : 'any domain'} beside rule ${narrower.id}, which allows only ${[...(narrower.merchants ?? []), ...(narrower.domains ?? [])].join(', ')}: the narrower rule would no longer limit anything.`,
      },
    });
  }
}

/** Rules of live agents only: a removed agent's mandate can no longer be changed, nor used. */
async function rulesInWorkspace(parts: SaveParts, wid: string, exceptAgent: string): Promise<number> {
  const others = (await parts.repo.inWorkspace(wid)).filter((m) => m.agentId !== exceptAgent);
  const live = await Promise.all(others.map(async (m) => !(await parts.agents.get(wid, m.agentId))?.removedAt));
  return others.reduce((n, m, i) => n + (live[i] ? m.mandate.rules.length : 0), 0);
}

/** The plan's mandate allowance over the workspace's live agents: 402 plan_limit_reached past it. */
async function withinPlanAllowance(
  parts: SaveParts,
  wid: string,
  aid: string,
  rules: readonly MandateRule[],
): Promise<void> {
  const maxRules = await parts.maxRules(wid);
  if (maxRules !== null && (await rulesInWorkspace(parts, wid, aid)) + rules.length > maxRules) {
    throw new AppError('plan_limit_reached', {
      message: `The plan allows ${maxRules} mandate rules in a workspace; this mandate would pass it.`,
      fix: 'Remove rules you no longer use, or raise plan.mandateRules in the configuration.',
    });
  }
}

/** Saves an agent's mandate. Only inside store.write(); the caller has refused duplicates. */
export async function saveMandateInWrite(
  parts: SaveParts,
  wid: string,
  aid: string,
  input: MandateInput,
  who: AgentActor,
): Promise<MandateView> {
  const { repo, ledger, clock, ids } = parts;
  const rules = withIds(input.rules, await repo.rules(wid, aid), ids);
  await memberRulesFromTemplates(parts, wid, rules, who);
  broadeningConfirmed(rules, input);
  await withinPlanAllowance(parts, wid, aid, rules);
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
}
