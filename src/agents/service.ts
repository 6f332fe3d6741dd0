import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { tokenOf, type Ledger } from '../ledger/service.js';
import type { Store } from '../store/index.js';
import type { AgentRecord, Hold } from './records.js';
import type { Role } from '../people/records.js';
import { agentsRepo } from './repo.js';
import type { PrincipalEnded } from '../lib/principal-ended.js';
import { checkActsFor, createAgentIn } from './create.js';
import { pageOfAgents } from './page.js';
import { sees, toAgentView, type AgentView, type AgentViewer } from './view.js';

export { sees, toAgentView, type AgentView, type AgentViewer } from './view.js';

/**
 * Rules:
 * - An agent belongs to exactly one workspace; an id of another workspace is not found.
 * - An agent acts for a person of its workspace (or nobody, when an owner or admin says so).
 *   A member may create and manage only agents that act for them.
 * - Per person (docs/api.md, the agents routes): owners, admins and auditors read every agent (`agents.readAll`);
 *   members and analysts read only the agents that act for them. Any other agent is to them as an
 *   agent of another workspace: `404 not_found`, on reads and on writes, so that no answer tells
 *   them it exists (its name, tags, holds or whom it acts for).
 * - A removed agent keeps its record (with removedAt) so that its keys answer agent_not_found.
 * - The plan's agent allowance (configuration; unlimited by default) counts live agents:
 *   402 plan_limit_reached past it, checked inside the write, so racing creations cannot pass it
 *   (`maxAgents` may read the store: it is awaited there, so its reads are the write's).
 * - Every creation, change and removal is recorded in the ledger with its actor.
 * - Agent records are written here alone; the kill switch sets holds through `setHoldsInWrite`.
 *
 * Creation is in ./create.ts, paging in ./page.ts, how people see an agent in ./view.ts.
 */

const noSuchAgent = () => new AppError('not_found', { message: 'No such agent in this workspace.' });

/** Who is asking, as far as agents care: their id and role, or a machine (a token names its id). */
export interface AgentActor {
  actor: string;
  userId?: string;
  role?: Role;
  tokenId?: string;
}

export interface NewAgent {
  workspaceId: string;
  name: string;
  actsFor?: string | null;
  tags?: string[];
  blueprint?: string | null;
}

/**
 * What the kill switch asks of agents: an agent's holds, changed inside the kill switch's own
 * write (with its ledger record), while the agent record stays written by agents alone.
 */
export interface AgentHolds {
  /**
   * Inside the caller's store.write(): stores `agent` (as read in that write) with `holds` in
   * place of its own, and bumps the `keys` generation as every agent write does (the keys
   * service caches an agent key's agent, holds included). Writes the agents table only.
   */
  setHoldsInWrite(agent: AgentRecord, holds: Hold[]): Promise<AgentRecord>;
}

/**
 * The agents of a workspace: creating, changing and removing them (each with its ledger record,
 * in the same write), and reading them as people and machines may see them. Reads and writes the
 * agents table, reads members and "stop every agent"; writes nothing of another domain except
 * through the principal-ended hooks it is given.
 */
export interface Agents extends AgentHolds {
  /** Creates an agent in its own write (`agent.created`); 402 plan_limit_reached past the plan's allowance. */
  create(input: NewAgent, who?: AgentActor): Promise<AgentRecord>;
  /** The creation alone, inside a store.write() the caller holds (so a mandate can join it). */
  createIn(input: NewAgent, who: AgentActor): Promise<AgentRecord>;
  /** Changes a live agent the caller may manage (`agent.updated`); 404 for any other. */
  update(
    wid: string,
    aid: string,
    change: { name?: string; tags?: string[]; actsFor?: string | null; blueprint?: string | null },
    who: AgentActor,
  ): Promise<AgentRecord>;
  /**
   * Removes a live agent the caller may manage (`agent.removed`), keeping its record with
   * `removedAt`; what it held in other domains ends in the same write (principal-ended hooks).
   */
  remove(wid: string, aid: string, who?: AgentActor): Promise<AgentRecord>;
  /** The agent as people see it, with the workspace's stop-all read now. */
  view(agent: AgentRecord): Promise<AgentView>;
  /** Every live agent of the workspace as people see it, with its stop-all read once for all. */
  views(wid: string): Promise<AgentView[]>;
  /** A live agent the caller may manage (members: their own), or 404. */
  manageable(wid: string, aid: string, who: AgentActor): Promise<AgentRecord>;
  /** A live agent this person sees (see `sees`), or 404 as for an agent of another workspace. */
  readable(wid: string, aid: string, viewer: AgentViewer): Promise<AgentRecord>;
  /** A live agent, or undefined (removed or unknown). */
  get(wid: string, aid: string): Promise<AgentRecord | undefined>;
  /** Every live agent of the workspace. */
  list(wid: string): Promise<AgentRecord[]>;
  /** A page of the live agents `viewer` sees (every agent when no viewer is named: machines, the CLI). */
  page(
    wid: string,
    options: { after?: string; limit: number },
    viewer?: AgentViewer,
  ): Promise<{ data: AgentView[]; next: string | null }>;
}

/** The agents service under its earlier name (the same contract). */
export type AgentsService = Agents;

export interface AgentsDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  maxAgents: (wid: string) => number | null | Promise<number | null>;
  /** What ends with an agent in other domains (its OAuth connections), inside the removal's write. */
  principalEnded: PrincipalEnded;
}

export function createAgentsService(deps: AgentsDeps): Agents {
  const { store, clock, ledger } = deps;
  const repo = agentsRepo(store);

  const live = async (wid: string, aid: string): Promise<AgentRecord> => {
    const agent = await repo.get(wid, aid);
    if (!agent || agent.removedAt) throw noSuchAgent();
    return agent;
  };
  const createIn = (input: NewAgent, who: AgentActor) => createAgentIn({ ...deps, repo }, input, who);
  /** A member may act only on agents that act for them; any other is not found to them. */
  const mayManage = (agent: AgentRecord, who: AgentActor): void => {
    if (who.role === 'member' && agent.actsFor !== who.userId) throw noSuchAgent();
  };
  return {
    async create(input: NewAgent, who: AgentActor = { actor: 'operator:cli' }): Promise<AgentRecord> {
      return store.write(() => createIn(input, who));
    },

    createIn,

    async update(
      wid: string,
      aid: string,
      change: { name?: string; tags?: string[]; actsFor?: string | null; blueprint?: string | null },
      who: AgentActor,
    ): Promise<AgentRecord> {
      return store.write(async () => {
        const agent = await live(wid, aid);
        mayManage(agent, who);
        if (change.actsFor !== undefined) await checkActsFor(repo, wid, change.actsFor, who);
        const updated: AgentRecord = { ...agent, ...change };
        await repo.put(updated);
        await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          ...tokenOf(who),
          kind: 'agent.updated',
          subject: aid,
          data: { ...change },
        });
        return updated;
      });
    },

    async remove(wid: string, aid: string, who: AgentActor = { actor: 'operator:cli' }): Promise<AgentRecord> {
      return store.write(async () => {
        const agent = await live(wid, aid);
        mayManage(agent, who);
        const removed = { ...agent, removedAt: isoAt(clock.now()) };
        await repo.put(removed);
        await deps.principalEnded.agent(wid, { agentId: aid }, 'agent removed', clock.now());
        await ledger.record({
          workspaceId: wid,
          actor: who.actor,
          ...tokenOf(who),
          kind: 'agent.removed',
          subject: aid,
          data: {},
        });
        return removed;
      });
    },

    /** The agent as people see it, with the workspace's stop-all read now. */
    async view(agent: AgentRecord): Promise<AgentView> {
      return toAgentView(agent, await repo.stopAll(agent.workspaceId));
    },

    /** Every live agent of the workspace as people see it, with its stop-all read once for all. */
    async views(wid: string): Promise<AgentView[]> {
      const [agents, stopAll] = await Promise.all([repo.list(wid), repo.stopAll(wid)]);
      return agents.filter((a) => !a.removedAt).map((a) => toAgentView(a, stopAll));
    },

    /** A live agent the caller may manage (members: their own), or 404. */
    async manageable(wid: string, aid: string, who: AgentActor): Promise<AgentRecord> {
      const agent = await live(wid, aid);
      mayManage(agent, who);
      return agent;
    },

    /** A live agent this person sees (see `sees`), or 404 as for an agent of another workspace. */
    async readable(wid: string, aid: string, viewer: AgentViewer): Promise<AgentRecord> {
      const agent = await live(wid, aid);
      if (!sees(agent, viewer)) throw noSuchAgent();
      return agent;
    },

    async setHoldsInWrite(agent: AgentRecord, holds: Hold[]): Promise<AgentRecord> {
      const held = { ...agent, holds };
      await repo.put(held);
      return held;
    },

    async get(wid: string, aid: string): Promise<AgentRecord | undefined> {
      const agent = await repo.get(wid, aid);
      return agent && !agent.removedAt ? agent : undefined;
    },

    async list(wid: string): Promise<AgentRecord[]> {
      return (await repo.list(wid)).filter((a) => !a.removedAt);
    },

    page: (wid, options, viewer) => pageOfAgents(repo, wid, options, viewer),
  };
}
