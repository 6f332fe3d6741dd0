import type { Services } from '../app.js';
import { toFreezeAnswer } from '../killswitch/index.js';
import type { Admin } from './admin.js';

/**
 * The operator's commands on the store (`--local`): the domain services, as the operator
 * (actor `operator:cli`; hold `owner`, as Stop in the console), so each writes the same records
 * as the console does for the same act. Only the services a command uses are built.
 */
const OPERATOR = { actor: 'operator:cli' } as const;
/** The operator on the store stands where an owner stands in the console. */
const AS_OWNER = { actor: 'operator:cli', role: 'owner' } as const;

/** Every page of a service's list, in order. */
async function everyPage<T extends { id: string }>(
  list: (options: {
    after?: string;
    limit: number;
  }) => Promise<{ data: T[]; next: string | null }> | { data: T[]; next: string | null },
): Promise<T[]> {
  const out: T[] = [];
  for (let after: string | undefined; ;) {
    const page = await list({ limit: 200, ...(after ? { after } : {}) });
    out.push(...page.data);
    if (!page.next || page.data.length === 0) return out;
    after = page.next;
  }
}

export function localAdmin(s: Services, wid: string): Admin {
  return {
    createAgent: async (input) => {
      const agent = await s.blueprints.register({ workspaceId: wid, ...input }, OPERATOR);
      return { ...(await s.agents.view(agent)), mandateRules: agent.mandateRules };
    },
    listAgents: async (q) =>
      (await Promise.all((await s.agents.list(wid)).map((a) => s.agents.view(a)))).filter(
        (a) => (!q.tag || a.tags.includes(q.tag)) && (!q.status || a.status === q.status),
      ),
    stopAgent: async (aid, reason) =>
      s.agents.view(await s.killSwitch.stop(wid, aid, { hold: 'owner', reason }, OPERATOR)),
    restartAgent: async (aid) => s.agents.view(await s.killSwitch.restart(wid, aid, AS_OWNER)),
    freeze: async (selector, reason, confirmCount) =>
      toFreezeAnswer(await s.killSwitch.freezeSelected(wid, { selector, reason, confirmCount }, OPERATOR)),
    stopAllOn: async (reason) => {
      await s.killSwitch.stopAll(wid, reason, OPERATOR);
      return s.killSwitch.stopAllState(wid);
    },
    stopAllOff: async () => {
      await s.killSwitch.startAll(wid, OPERATOR);
      return s.killSwitch.stopAllState(wid);
    },
    stopAllStatus: async () => s.killSwitch.stopAllState(wid),
    listApprovals: async () => everyPage((o) => s.approvals.list(wid, { status: 'pending', ...o })),
    listKeys: async () => everyPage((o) => s.keys.list(wid, o)),
    revokeKey: (id) => s.keys.revoke(wid, id, OPERATOR.actor),
    mintKey: (input) => s.keys.mint(wid, input, OPERATOR.actor),
    createToken: (input) => s.serviceTokens.create(wid, input, OPERATOR.actor),
    listTokens: async () => everyPage((o) => s.serviceTokens.list(wid, o)),
    revokeToken: (id) => s.serviceTokens.revoke(wid, id, OPERATOR.actor),
  };
}
