import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { secretHash } from '../lib/secrets.js';
import type { Ledger } from '../ledger/service.js';
import { standingOf } from '../agents/standing.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { Role } from '../people/records.js';
import type { OAuthConnectionRecord } from './records.js';
import { urlClient } from './client-auth.js';
import { ClientMetadataProblem, isRegisteredClientId, isUrlClientId, type ClientMetadata } from './client-metadata.js';
import { redirectMatches } from './redirects.js';
import type { OAuthRepo } from './repo.js';

/**
 * The authorization endpoint's side in the service (its pages: http.ts, pages.ts): which client
 * and redirect a request names, which agents a person may connect, and a person's consent, which
 * makes the connection and its code in one write.
 */
export const CODE_TTL_MS = 5 * 60_000;

export interface AuthorizeRequest {
  clientId: string;
  redirectUri: string;
  challenge: string;
  state: string | null;
  resource: string;
  /** The granted scope (scopes.ts). */
  scope: string;
  /** A URL client's name, from its metadata document when the consent page was shown. */
  clientName?: string;
  /** The consent form's own id: a form connects once. */
  nonce?: string;
  /** When the consent form expires (ms). */
  exp?: number;
}

/** A client as the authorization endpoint sees it: registered, or described by its metadata document (`host` set). */
export interface AuthorizingClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  host?: string;
}

/** An agent a person may connect, with its workspace. */
export interface ConnectableAgent {
  workspaceId: string;
  workspaceName: string;
  agentId: string;
  agentName: string;
}

/**
 * The client and the redirect to use, or the problem to show on an error page (never a
 * redirect). A URL client_id is resolved through its metadata document (fetched or cached).
 */
export async function clientAndRedirect(
  deps: { repo: OAuthRepo; clientMetadata: ClientMetadata },
  clientId: string | undefined,
  redirectUri: string | undefined,
): Promise<{ client: AuthorizingClient; redirectUri: string } | { problem: string }> {
  let client: AuthorizingClient | undefined;
  if (clientId && isUrlClientId(clientId)) {
    try {
      client = await deps.clientMetadata.resolve(clientId);
    } catch (err) {
      if (err instanceof ClientMetadataProblem)
        return { problem: `This application's client_id cannot be used: ${err.message}` };
      throw err;
    }
  } else client = clientId && isRegisteredClientId(clientId) ? await deps.repo.getClient(clientId) : undefined;
  if (!client) return { problem: 'This application is not registered here (unknown client_id).' };
  if (redirectUri === undefined) {
    if (client.redirectUris.length === 1) return { client, redirectUri: client.redirectUris[0]! };
    return { problem: 'The application did not say where to send you back (redirect_uri).' };
  }
  if (!client.redirectUris.some((r) => redirectMatches(r, redirectUri)))
    return {
      problem: client.host
        ? `The address to send you back to is not one of those in the application's metadata document (${client.host}).`
        : 'The address to send you back to is not one this application registered.',
    };
  return { client, redirectUri };
}

/** Whether a person of `role` may connect the agent: live, not stopped, and theirs as a member. */
const mayConnect = (agent: AgentRecord, role: Role, userId: string, stopped: boolean): boolean =>
  !agent.removedAt && !stopped && !(role === 'member' && agent.actsFor !== userId);

/** The agents a person may connect: every agent of workspaces they own or administer; as a member, the agents that act for them. */
export async function connectable(repo: OAuthRepo, userId: string): Promise<ConnectableAgent[]> {
  const memberships = (await repo.membershipsOf(userId)).filter(
    ({ role }) => role === 'owner' || role === 'admin' || role === 'member',
  );
  const perWorkspace = await Promise.all(
    memberships.map(async ({ workspaceId: wid, role }) => {
      const [workspace, stopAll, agents] = await Promise.all([
        repo.getWorkspace(wid),
        repo.stopAllOf(wid),
        repo.agentsOf(wid),
      ]);
      return agents
        .filter((a) => mayConnect(a, role, userId, standingOf(a, stopAll).stopped))
        .map((a) => ({ workspaceId: wid, workspaceName: workspace?.name ?? wid, agentId: a.id, agentName: a.name }));
    }),
  );
  return perWorkspace.flat();
}

/**
 * A person's consent: the connection and its code, in one write (recorded as `oauth.connected`).
 * What made the agent connectable is checked again inside the write: a freeze, removal or
 * departure committed a moment earlier must not leave a connection alive that it would have ended.
 */
export async function grantConnection(
  deps: { store: Store; repo: OAuthRepo; clock: Clock; ids: IdSource; ledger: Ledger },
  req: AuthorizeRequest,
  userId: string,
  agentId: string,
): Promise<string> {
  const { store, repo, clock, ids, ledger } = deps;
  const choice = (await connectable(repo, userId)).find((c) => c.agentId === agentId);
  if (!choice)
    throw invalidField('agent', 'you may not connect that agent (it is not yours, is stopped, or was removed)');
  const client = isUrlClientId(req.clientId)
    ? urlClient(req.clientId, req.clientName ?? new URL(req.clientId).host)
    : await repo.getClient(req.clientId);
  if (!client) throw new AppError('invalid_client');
  const code = ids.secret('aat').replace(/^aat_/, 'code_');
  await store.write(async () => {
    const now = clock.now();
    // One read after another: a write's reads share one connection.
    const role = await repo.roleIn(userId, choice.workspaceId);
    const live = await repo.getAgent(choice.workspaceId, agentId);
    if (
      !role ||
      !live ||
      !mayConnect(live, role, userId, standingOf(live, await repo.stopAllOf(choice.workspaceId)).stopped)
    ) {
      throw invalidField(
        'agent',
        'you may no longer connect that agent (it was stopped or removed, or you left the workspace)',
      );
    }
    if (req.nonce !== undefined) {
      if (await repo.consentUsed(req.nonce))
        throw new AppError('forbidden', {
          message: 'This consent form was already used.',
          fix: 'Start the connection again from the application.',
        });
      await repo.useConsent(req.nonce, isoAt(req.exp ?? now));
    }
    const connection: OAuthConnectionRecord = {
      id: ids.id('cnx'),
      workspaceId: choice.workspaceId,
      clientId: client.clientId,
      clientName: client.clientName,
      agentId,
      userId,
      scope: req.scope,
      createdAt: isoAt(now),
      endedAt: null,
      endedWhy: null,
    };
    await repo.putConnection(connection);
    await repo.putCode(secretHash(code), {
      clientId: client.clientId,
      redirectUri: req.redirectUri,
      challenge: req.challenge,
      connectionId: connection.id,
      workspaceId: connection.workspaceId,
      expiresAt: isoAt(now + CODE_TTL_MS),
      usedAt: null,
    });
    await ledger.record({
      workspaceId: connection.workspaceId,
      actor: `user:${userId}`,
      kind: 'oauth.connected',
      subject: connection.id,
      data: { clientId: client.clientId, clientName: client.clientName, agentId, scope: req.scope },
    });
  });
  return code;
}
