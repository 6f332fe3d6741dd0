import { isoAt } from '../lib/clock.js';
import type { Tables } from '../store/index.js';
import type { OAuthConnectionRecord } from './records.js';

/**
 * Ending OAuth connections (docs/mcp-oauth.md#oauth-for-mcp-clients): when the agent is frozen or removed, or the
 * connecting person leaves the workspace, every connection they hold ends at once, inside the
 * same write as the freeze, removal or departure, so no token of it works a moment longer. An
 * ended connection stays ended when the agent is restarted: the person connects again.
 */
export async function endConnectionsInWrite(
  t: Pick<Tables, 'oauthConnections'>,
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
}
