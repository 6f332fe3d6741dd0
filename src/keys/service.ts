import { AppError, invalidField } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { hasPrefix, type IdSource } from '../lib/ids.js';
import { secretHash } from '../lib/secrets.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { RateLimits } from '../gateway/records.js';
import type { KeyRecord } from './records.js';
import { agentsRepo } from '../agents/repo.js';
import type { Ledger } from '../ledger/service.js';
import { keysRepo } from './repo.js';
import type { MintKeyInput } from './schemas.js';

/**
 * Rules:
 * - A key value (ask_ + 256 random bits) is returned once, at minting; the store keeps its
 *   SHA-256 hash and finds the key by that hash.
 * - A key of scope `agent` is bound to exactly one live agent of the same workspace.
 * - A revoked key is unknown from the next request on.
 * - Minting and revoking are recorded in the ledger (never the key value or its hash).
 */

export interface KeyView {
  id: string;
  scope: KeyRecord['scope'];
  name: string | null;
  principal: string | null;
  team: string | null;
  defaultTaskClass: string | null;
  policyProfile: string | null;
  agentId: string | null;
  limits: RateLimits | null;
  workspaceId: string;
  createdAt: string;
  revokedAt: string | null;
}

export interface ResolvedKey {
  record: KeyRecord;
  /** For agent keys: the bound agent, which may have been removed. */
  agent?: AgentRecord | undefined;
}

export function toKeyView(r: KeyRecord): KeyView {
  return {
    id: r.id,
    scope: r.scope,
    name: r.name,
    principal: r.principal,
    team: r.team,
    defaultTaskClass: r.defaultTaskClass,
    policyProfile: r.policyProfile,
    agentId: r.agentId,
    limits: r.limits ?? null,
    workspaceId: r.workspaceId,
    createdAt: r.createdAt,
    revokedAt: r.revokedAt,
  };
}

export function createKeysService(deps: { store: Store; clock: Clock; ids: IdSource; ledger: Ledger }) {
  const { store, clock, ids, ledger } = deps;
  const repo = keysRepo(store);
  const agents = agentsRepo(store);

  return {
    /** Mints a key; `createdBy` is the actor as the ledger names it (user:…, key:…, operator). */
    async mint(workspaceId: string, input: MintKeyInput, createdBy: string): Promise<KeyView & { key: string }> {
      const key = ids.secret('ask');
      const record: KeyRecord = {
        id: ids.id('key'),
        workspaceId,
        scope: input.scope,
        name: input.name ?? null,
        principal: input.principal ?? null,
        team: input.team ?? null,
        defaultTaskClass: input.defaultTaskClass ?? null,
        policyProfile: input.policyProfile ?? null,
        agentId: input.agentId ?? null,
        ...(input.limits && Object.keys(input.limits).length > 0 ? { limits: input.limits } : {}),
        hash: secretHash(key),
        createdAt: isoAt(clock.now()),
        createdBy,
        revokedAt: null,
      };
      await store.write(async () => {
        if (record.scope === 'agent') {
          const agent = await agents.get(workspaceId, record.agentId!);
          if (!agent || agent.removedAt) {
            throw invalidField('agentId', '"agentId" names no agent in this workspace');
          }
        }
        await repo.put(record);
        await ledger.record({
          workspaceId,
          actor: createdBy,
          kind: 'key.minted',
          subject: record.id,
          data: { scope: record.scope, name: record.name, agentId: record.agentId },
        });
      });
      return { ...toKeyView(record), key };
    },

    /** The live key behind a presented value, or undefined (unknown or revoked). */
    async resolve(value: string): Promise<ResolvedKey | undefined> {
      if (!hasPrefix(value, 'ask')) return undefined;
      const record = await repo.byHash(secretHash(value));
      if (!record || record.revokedAt) return undefined;
      if (record.scope !== 'agent') return { record };
      return { record, agent: await agents.get(record.workspaceId, record.agentId!) };
    },

    async list(wid: string, options: { after?: string; limit: number }) {
      const rows = await repo.list(wid, { ...options, limit: options.limit + 1 });
      const page = rows.slice(0, options.limit);
      return { data: page.map(toKeyView), next: rows.length > options.limit ? page[page.length - 1]!.id : null };
    },

    /** One agent's keys (revoked ones too, with revokedAt), oldest first: for its page in the console. */
    async forAgent(wid: string, agentId: string): Promise<KeyView[]> {
      return (await repo.list(wid, {}))
        .filter((r) => r.agentId === agentId)
        .sort((x, y) => (x.createdAt < y.createdAt ? -1 : x.createdAt > y.createdAt ? 1 : x.id < y.id ? -1 : 1))
        .map(toKeyView);
    },

    /** Revokes a key; `only.agentId` limits it to one agent's keys (404 for any other key). */
    async revoke(wid: string, keyId: string, actor = 'operator:cli', only: { agentId?: string } = {}): Promise<void> {
      await store.write(async () => {
        const record = await repo.get(wid, keyId);
        if (!record || record.revokedAt || (only.agentId !== undefined && record.agentId !== only.agentId)) {
          throw new AppError('not_found', { message: 'No such key in this workspace.' });
        }
        await repo.put({ ...record, revokedAt: isoAt(clock.now()) });
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: 'key.revoked',
          subject: keyId,
          data: { scope: record.scope, agentId: record.agentId },
        });
      });
    },
  };
}

export type KeysService = ReturnType<typeof createKeysService>;
