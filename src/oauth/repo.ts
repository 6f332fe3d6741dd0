import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { StopAllRecord } from '../agents/records.js';
import type { OAuthClientRecord, OAuthCodeRecord, OAuthConnectionRecord, OAuthTokenRecord } from './records.js';
import type { Role, WorkspaceRecord } from '../people/records.js';
import { isoAt } from '../lib/clock.js';

/**
 * The authorization server's records: registered clients, connections, codes and tokens (by
 * hash), used consent forms; and the few records of other domains it reads to decide who may
 * connect which agent (memberships, workspaces, agents, the workspace's stop). Writes go inside
 * store.write().
 */
export function oauthRepo(store: Store) {
  const t = store.tables;
  return {
    getClient(clientId: string): Promise<OAuthClientRecord | undefined> {
      return t.oauthClients.get(clientId);
    },
    async putClient(client: OAuthClientRecord): Promise<void> {
      await t.oauthClients.put(client.clientId, client);
    },

    getConnection(wid: string, cnxId: string): Promise<OAuthConnectionRecord | undefined> {
      return t.oauthConnections.get([wid, cnxId]);
    },
    async putConnection(c: OAuthConnectionRecord): Promise<void> {
      await t.oauthConnections.put([c.workspaceId, c.id], c);
    },
    async listConnections(wid: string): Promise<OAuthConnectionRecord[]> {
      return (await t.oauthConnections.scan([wid])).map((e) => e.value);
    },
    /**
     * Inside a write: ends every live connection `match` names (an agent's, a person's, or all of
     * the workspace's) and returns them. When the agent is frozen or removed, or the connecting
     * person leaves the workspace, every connection they hold ends in the same write as the freeze,
     * removal or departure, so no token of it works a moment longer
     * (docs/mcp-oauth.md#oauth-for-mcp-clients). An ended connection stays ended when the agent is
     * restarted: the person connects again.
     */
    async endConnections(
      wid: string,
      match: { agentId?: string; userId?: string; all?: true },
      why: string,
      nowMs: number,
    ): Promise<OAuthConnectionRecord[]> {
      const ended: OAuthConnectionRecord[] = [];
      for (const { value: c } of await t.oauthConnections.scan([wid])) {
        if (c.endedAt) continue;
        if (!match.all && c.agentId !== match.agentId && c.userId !== match.userId) continue;
        const done = { ...c, endedAt: isoAt(nowMs), endedWhy: why };
        await t.oauthConnections.put([wid, c.id], done);
        ended.push(done);
      }
      return ended;
    },

    getCode(hash: string): Promise<OAuthCodeRecord | undefined> {
      return t.oauthCodes.get(hash);
    },
    async putCode(hash: string, code: OAuthCodeRecord): Promise<void> {
      await t.oauthCodes.put(hash, code);
    },

    getToken(hash: string): Promise<OAuthTokenRecord | undefined> {
      return t.oauthTokens.get(hash);
    },
    async putToken(hash: string, token: OAuthTokenRecord): Promise<void> {
      await t.oauthTokens.put(hash, token);
    },
    async removeToken(hash: string): Promise<void> {
      await t.oauthTokens.remove(hash);
    },

    consentUsed(nonce: string): Promise<boolean> {
      return t.oauthConsentsUsed.has(nonce);
    },
    /** Keeps a consent form's nonce until `untilIso`, when the form would have expired anyway. */
    async useConsent(nonce: string, untilIso: string): Promise<void> {
      await t.oauthConsentsUsed.put(nonce, untilIso);
    },

    /** A person's workspaces and their role in each. */
    async membershipsOf(userId: string): Promise<Array<{ workspaceId: string; role: Role }>> {
      return (await t.userWorkspaces.scan([userId])).map(({ key, value }) => ({
        workspaceId: String(key[1]),
        role: value,
      }));
    },
    roleIn(userId: string, wid: string): Promise<Role | undefined> {
      return t.userWorkspaces.get([userId, wid]);
    },
    getWorkspace(wid: string): Promise<WorkspaceRecord | undefined> {
      return t.workspaces.get(wid);
    },
    stopAllOf(wid: string): Promise<StopAllRecord | undefined> {
      return t.stopAll.get(wid);
    },
    getAgent(wid: string, aid: string): Promise<AgentRecord | undefined> {
      return t.agents.get([wid, aid]);
    },
    async agentsOf(wid: string): Promise<AgentRecord[]> {
      return (await t.agents.scan([wid])).map((e) => e.value);
    },
  };
}

export type OAuthRepo = ReturnType<typeof oauthRepo>;
