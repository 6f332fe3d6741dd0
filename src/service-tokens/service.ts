import { alreadyRevoked, AppError, invalidField } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { hasPrefix, type IdSource } from '../lib/ids.js';
import { secretHash } from '../lib/secrets.js';
import { addressAllowed } from '../lib/ip-ranges.js';
import type { Ledger } from '../ledger/service.js';
import type { Store } from '../store/index.js';
import type { ServiceTokenRecord, ServiceTokenScope } from './records.js';
import { serviceTokensRepo } from './repo.js';

/**
 * Rules (docs/security.md#security-model):
 * - Every token expires, at most 90 days after creation.
 * - Unknown, revoked, or used from an address outside ipAllow: 401 invalid_token (one answer,
 *   so the reply does not tell a thief which check failed); expired: 401 token_expired.
 * - ipAllow ranges are CIDR, IPv4 or IPv6; an IPv4-mapped IPv6 client address matches IPv4 ranges.
 * - No scope decides an approval or lifts a freeze; scopes only ever add machine reads and freezes.
 * - Creating and revoking a token are ledger records naming who did it; the value and its hash
 *   never appear there.
 */

export const serviceTokenScopes: readonly ServiceTokenScope[] = [
  'agents:read',
  'agents:write',
  'agents:freeze',
  'approvals:read',
  'evidence:read',
  'mcp:read',
  'mcp:write',
  // svc export (setup:read) and svc apply (setup:write): the workspace's setup as a file.
  'setup:read',
  'setup:write',
];

export interface CreateTokenInput {
  name: string;
  scopes: ServiceTokenScope[];
  expiresInDays: number;
  ipAllow?: string[];
}

const DAY_MS = 86_400_000;

/** Every token expires, at most this many days after creation. */
export const MAX_TOKEN_DAYS = 90;

export type ServiceTokenView = Omit<ServiceTokenRecord, 'hash'>;

const viewOf = ({ hash: _hash, ...view }: ServiceTokenRecord): ServiceTokenView => view;

export function createServiceTokensService(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger?: Ledger;
}): ServiceTokensService {
  const { store, clock, ids, ledger } = deps;
  const repo = serviceTokensRepo(store);
  return {
    /** Creates a token; its value is returned once. `actor` is who, as the ledger names them. */
    async create(workspaceId: string, input: CreateTokenInput, actor = 'operator:cli') {
      if (!Number.isInteger(input.expiresInDays) || input.expiresInDays < 1 || input.expiresInDays > MAX_TOKEN_DAYS) {
        throw invalidField('expiresInDays', `"expiresInDays" must be a whole number from 1 to ${MAX_TOKEN_DAYS}`);
      }
      const token = ids.secret('ims');
      const now = clock.now();
      const record: ServiceTokenRecord = {
        id: ids.id('tok'),
        workspaceId,
        name: input.name,
        scopes: [...new Set(input.scopes)],
        ipAllow: input.ipAllow ?? [],
        hash: secretHash(token),
        createdAt: isoAt(now),
        expiresAt: isoAt(now + input.expiresInDays * DAY_MS),
        revokedAt: null,
      };
      await store.write(async () => {
        await repo.create(record);
        await ledger?.record({
          workspaceId,
          actor,
          kind: 'service_token.created',
          subject: record.id,
          data: { name: record.name, scopes: record.scopes, expiresAt: record.expiresAt, ipAllow: record.ipAllow },
        });
      });
      return { ...viewOf(record), token };
    },

    async list(
      workspaceId: string,
      options: { after?: string; limit: number },
    ): Promise<{ data: ServiceTokenView[]; next: string | null }> {
      const rows = await repo.list(workspaceId, {
        ...(options.after ? { after: options.after } : {}),
        limit: options.limit + 1,
      });
      const page = rows.slice(0, options.limit);
      return { data: page.map(viewOf), next: rows.length > options.limit ? page[page.length - 1]!.id : null };
    },

    async revoke(workspaceId: string, id: string, actor = 'operator:cli'): Promise<void> {
      await store.write(async () => {
        const record = await repo.get(workspaceId, id);
        if (!record) throw new AppError('not_found', { message: 'No such service token in this workspace.' });
        if (record.revokedAt) throw alreadyRevoked(`Service token ${id}`, record.revokedAt);
        await repo.put({ ...record, revokedAt: isoAt(clock.now()) });
        await ledger?.record({
          workspaceId,
          actor,
          kind: 'service_token.revoked',
          subject: id,
          data: { name: record.name },
        });
      });
    },

    /** Authenticates a presented token from a client address; throws invalid_token or token_expired. */
    async verify(value: string, clientAddress: string): Promise<ServiceTokenRecord> {
      const record = hasPrefix(value, 'ims') ? await repo.byHash(secretHash(value)) : undefined;
      if (!record || record.revokedAt) throw new AppError('invalid_token');
      // The address first: from outside ipAllow even an expired token is just invalid, so the
      // answer never tells an outsider that the token is real.
      if (!addressAllowed(clientAddress, record.ipAllow)) throw new AppError('invalid_token');
      if (Date.parse(record.expiresAt) <= clock.now()) throw new AppError('token_expired');
      return record;
    },
  };
}

/**
 * Service tokens, the credentials of pipelines and operators' scripts on the admin routes:
 * created (the value shown once, stored as a hash), listed, revoked and verified on each request.
 * Writes `serviceTokens` and `serviceTokensByHash`, and a ledger record for each creation and
 * revocation.
 */
export interface ServiceTokensService {
  /** Creates a token; its value is returned once. `actor` is who, as the ledger names them. */
  create(workspaceId: string, input: CreateTokenInput, actor?: string): Promise<ServiceTokenView & { token: string }>;
  /** The workspace's tokens, a page at a time, never a value or a hash. */
  list(
    workspaceId: string,
    options: { after?: string; limit: number },
  ): Promise<{ data: ServiceTokenView[]; next: string | null }>;
  /** Revokes a token: refused from the next request on. */
  revoke(workspaceId: string, id: string, actor?: string): Promise<void>;
  /** Authenticates a presented token from a client address; throws invalid_token or token_expired. */
  verify(value: string, clientAddress: string): Promise<ServiceTokenRecord>;
}
