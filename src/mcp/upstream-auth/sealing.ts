import type { OAuthTokens } from '@modelcontextprotocol/client';
import { isoAt, type Clock } from '../../lib/clock.js';
import { sealText, unsealText } from '../../lib/seal.js';
import type { McpCredentialsRepo } from '../credentials/repo.js';
import type { McpCredentialKind, McpCredentialRecord, McpServerRecord } from '../records.js';

/**
 * How the upstream credentials are sealed: each value with the master key, bound to its
 * workspace, server, holder, kind and field, so a sealed token copied onto another record does
 * not open; a connection under way is bound to the hash of its state.
 */
const PURPOSE = 'mcp-upstream-credential';

type Bound = Pick<McpCredentialRecord, 'workspaceId' | 'server' | 'holder' | 'kind'>;

export interface CredentialSealing {
  seal(c: Bound, field: string, value: string): string;
  unseal(c: Bound, field: string, sealed: string): string;
  /** A connection under way's values, bound to its state's hash. */
  sealPending(stateHash: string, field: string, value: string): string;
  unsealPending(stateHash: string, field: string, sealed: string): string;
  /** The credential record of one holder and kind for this server, when it belongs to this server's life. */
  current(server: McpServerRecord, holder: string, kind: McpCredentialKind): Promise<McpCredentialRecord | undefined>;
  /** The OAuth record as tokens (the access token and what refreshing needs), sealed. */
  tokensRecord(
    base: Pick<McpCredentialRecord, 'workspaceId' | 'server' | 'serverCreatedAt' | 'holder'>,
    at: { issuer: string; metadata: Record<string, unknown>; resource: string | null },
    client: { clientId: string; clientSecret: string | null },
    tokens: OAuthTokens,
    previousRefresh: string | null,
  ): NonNullable<McpCredentialRecord['oauth']>;
}

export function createCredentialSealing(deps: {
  masterKey: Buffer;
  clock: Clock;
  repo: McpCredentialsRepo;
}): CredentialSealing {
  const { masterKey, clock, repo } = deps;
  const bound = (c: Bound, field: string) => `${c.workspaceId}/${c.server}/${c.holder}/${c.kind}/${field}`;
  const pendingBound = (stateHash: string, field: string) => `pending/${stateHash}/${field}`;
  const sealing: CredentialSealing = {
    seal: (c, field, value) => sealText(masterKey, PURPOSE, bound(c, field), value),
    unseal: (c, field, sealed) => unsealText(masterKey, PURPOSE, bound(c, field), sealed),
    sealPending: (stateHash, field, value) => sealText(masterKey, PURPOSE, pendingBound(stateHash, field), value),
    unsealPending: (stateHash, field, sealed) => unsealText(masterKey, PURPOSE, pendingBound(stateHash, field), sealed),

    async current(server, holder, kind) {
      const c = await repo.get(server.workspaceId, server.name, holder, kind);
      return c && c.serverCreatedAt === server.createdAt ? c : undefined;
    },

    tokensRecord(base, at, client, tokens, previousRefresh) {
      const c = { ...base, kind: 'oauth' as const };
      const refreshToken = tokens.refresh_token ?? previousRefresh;
      return {
        accessSealed: sealing.seal(c, 'access', tokens.access_token),
        refreshSealed: refreshToken ? sealing.seal(c, 'refresh', refreshToken) : null,
        expiresAt: typeof tokens.expires_in === 'number' ? isoAt(clock.now() + tokens.expires_in * 1000) : null,
        scope: tokens.scope ?? null,
        issuer: at.issuer,
        metadata: at.metadata,
        clientId: client.clientId,
        clientSecretSealed: client.clientSecret ? sealing.seal(c, 'client', client.clientSecret) : null,
        resource: at.resource,
      };
    },
  };
  return sealing;
}
