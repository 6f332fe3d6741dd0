import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { tokenOf, type Ledger } from '../ledger/service.js';
import type { AgentRecord } from './records.js';
import type { AgentsRepo } from './repo.js';
import type { AgentActor, NewAgent } from './service.js';

/**
 * Whom an agent may act for: a member only for themselves; anyone else only for a person of the
 * workspace (or nobody). 400 naming `actsFor` otherwise.
 */
export async function checkActsFor(
  repo: AgentsRepo,
  wid: string,
  actsFor: string | null,
  who: AgentActor,
): Promise<void> {
  if (who.role === 'member' && actsFor !== who.userId) {
    throw invalidField('actsFor', '"actsFor" must be your own id: members create agents that act for them');
  }
  if (actsFor !== null && !(await repo.isMember(wid, actsFor)))
    throw invalidField('actsFor', '"actsFor" names no person of this workspace');
}

/**
 * Creates an agent inside the caller's store.write(): whom it acts for checked, the plan's
 * allowance counted in that write (so racing creations cannot pass it: 402 plan_limit_reached),
 * then the agent and its `agent.created` record.
 */
export async function createAgentIn(
  deps: {
    repo: AgentsRepo;
    clock: Clock;
    ids: IdSource;
    ledger: Ledger;
    maxAgents: (wid: string) => number | null | Promise<number | null>;
  },
  input: NewAgent,
  who: AgentActor,
): Promise<AgentRecord> {
  const { repo } = deps;
  const actsFor = input.actsFor ?? (who.role === 'member' ? who.userId! : null);
  await checkActsFor(repo, input.workspaceId, actsFor, who);
  const maxAgents = await deps.maxAgents(input.workspaceId);
  if (maxAgents !== null && (await repo.list(input.workspaceId)).filter((a) => !a.removedAt).length >= maxAgents) {
    throw new AppError('plan_limit_reached', {
      message: `The plan allows ${maxAgents} agents in a workspace, and they are all in use.`,
      fix: 'Remove an agent you no longer use, or raise plan.agents in the configuration.',
    });
  }
  const agent: AgentRecord = {
    id: deps.ids.id('agt'),
    workspaceId: input.workspaceId,
    name: input.name,
    actsFor,
    tags: input.tags ?? [],
    holds: [],
    blueprint: input.blueprint ?? null,
    createdAt: isoAt(deps.clock.now()),
    removedAt: null,
  };
  await repo.put(agent);
  await deps.ledger.record({
    workspaceId: agent.workspaceId,
    actor: who.actor,
    ...tokenOf(who),
    kind: 'agent.created',
    subject: agent.id,
    data: { name: agent.name, actsFor, tags: agent.tags, ...(agent.blueprint ? { blueprint: agent.blueprint } : {}) },
  });
  return agent;
}
