import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { AgentRecord, Store } from '../store/index.js';
import { agentsRepo } from './repo.js';

/**
 * Rules:
 * - An agent belongs to exactly one workspace; an id of another workspace is not found.
 * - A removed agent keeps its record (with removedAt) so that its keys answer agent_not_found.
 */
export function createAgentsService(deps: { store: Store; clock: Clock; ids: IdSource }) {
  const { store, clock, ids } = deps;
  const repo = agentsRepo(store);
  return {
    async create(input: { workspaceId: string; name: string; actsFor?: string | null; tags?: string[] }): Promise<AgentRecord> {
      const agent: AgentRecord = {
        id: ids.id('agt'), workspaceId: input.workspaceId, name: input.name, actsFor: input.actsFor ?? null,
        tags: input.tags ?? [], createdAt: isoAt(clock.now()), removedAt: null,
      };
      await store.write(() => repo.put(agent));
      return agent;
    },
    async remove(wid: string, aid: string): Promise<AgentRecord> {
      return store.write(() => {
        const agent = repo.get(wid, aid);
        if (!agent || agent.removedAt) throw new AppError('not_found', { message: 'No such agent in this workspace.' });
        const removed = { ...agent, removedAt: isoAt(clock.now()) };
        repo.put(removed);
        return removed;
      });
    },
    get(wid: string, aid: string): AgentRecord | undefined {
      const agent = repo.get(wid, aid);
      return agent && !agent.removedAt ? agent : undefined;
    },
    list(wid: string): AgentRecord[] {
      return repo.list(wid).filter((a) => !a.removedAt);
    },
  };
}

export type AgentsService = ReturnType<typeof createAgentsService>;
