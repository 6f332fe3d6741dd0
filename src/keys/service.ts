import { alreadyRevoked, AppError, invalidField } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import { GenerationCache } from '../lib/generation-cache.js';
import { hasPrefix, type IdSource } from '../lib/ids.js';
import { secretHash } from '../lib/secrets.js';
import type { Store } from '../store/index.js';
import type { AgentRecord } from '../agents/records.js';
import type { RateLimits } from '../settings/schema.js';
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
 * - A revoked key is unknown from the next request on; so is an expired one (minted with
 *   `expiresInDays`), from its `expiresAt` on by the injected clock, whether cached or not. A key
 *   without `expiresAt` never expires.
 * - Minting and revoking are recorded in the ledger (never the key value or its hash).
 * - Authenticated keys are cached in memory (docs/operations.md): by key hash, the live key record and
 *   an agent key's agent record, valid for one value of the `keys` generation, which every write of
 *   a key or an agent bumps in its own transaction (keys/repo.ts `put`, agents/repo.ts `put`,
 *   killswitch/repo.ts `putAgent`), whichever process makes it (the CLI's `--local` included).
 *   Each use reads that counter first (one store read), so a revoke, a new key, an agent's removal
 *   or hold is seen by the very next request. Unknown and revoked keys are not cached.
 */

/** How many authenticated keys one process keeps in memory (least recently used go first). */
const RESOLVED_KEYS_CACHED = 10_000;

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
  /** When the key stops being accepted; null: never. */
  expiresAt: string | null;
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
    expiresAt: r.expiresAt ?? null,
    revokedAt: r.revokedAt,
  };
}

const DAY_MS = 86_400_000;

/** Whether a key is still accepted at `now` (ms): not revoked, and not past its expiry if it has one. */
export function keyStands(r: Pick<KeyRecord, 'revokedAt' | 'expiresAt'>, now: number): boolean {
  return r.revokedAt === null && (r.expiresAt == null || now < Date.parse(r.expiresAt));
}

export function createKeysService(deps: { store: Store; clock: Clock; ids: IdSource; ledger: Ledger }): KeysService {
  const { store, clock, ids, ledger } = deps;
  const repo = keysRepo(store);
  const agents = agentsRepo(store);
  // key hash -> the live key and an agent key's agent, under one `keys` generation (see the rules above).
  const resolved = new GenerationCache<string, ResolvedKey>(RESOLVED_KEYS_CACHED);

  return {
    /** Mints a key; `createdBy` is the actor as the ledger names it (user:…, key:…, operator). */
    async mint(workspaceId: string, input: MintKeyInput, createdBy: string): Promise<KeyView & { key: string }> {
      const key = ids.secret('ask');
      const now = clock.now();
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
        createdAt: isoAt(now),
        createdBy,
        ...(input.expiresInDays != null ? { expiresAt: isoAt(now + input.expiresInDays * DAY_MS) } : {}),
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
          data: {
            scope: record.scope,
            name: record.name,
            agentId: record.agentId,
            ...(record.expiresAt ? { expiresAt: record.expiresAt } : {}),
          },
        });
      });
      return { ...toKeyView(record), key };
    },

    /** The live key behind a presented value, or undefined (unknown, expired or revoked). */
    async resolve(value: string): Promise<ResolvedKey | undefined> {
      if (!hasPrefix(value, 'ask')) return undefined;
      const hash = secretHash(value);
      // Inside a write the transaction's own view is read and nothing is cached (it may yet roll back).
      const generation = store.inWrite() ? undefined : await repo.generation();
      // The counter before the records: a write landing after this read leaves the entry below
      // tagged with the older generation, so the next use refills it.
      const cached = generation === undefined ? undefined : resolved.get(generation, hash);
      // A cached key may have expired since it was cached: expiry is checked on every use.
      if (cached) return keyStands(cached.record, clock.now()) ? cached : undefined;
      const record = await repo.byHash(hash);
      if (!record || !keyStands(record, clock.now())) return undefined;
      const agent = record.scope === 'agent' ? await agents.get(record.workspaceId, record.agentId!) : undefined;
      // Shared by every request that presents the key until the next write: frozen, so none can alter it.
      const found: ResolvedKey = Object.freeze(
        record.scope === 'agent'
          ? { record: Object.freeze(record), agent: agent && Object.freeze(agent) }
          : { record: Object.freeze(record) },
      );
      if (generation !== undefined) resolved.set(generation, hash, found);
      return found;
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
        if (!record || (only.agentId !== undefined && record.agentId !== only.agentId)) {
          throw new AppError('not_found', { message: 'No such key in this workspace.' });
        }
        if (record.revokedAt) throw alreadyRevoked(`Key ${keyId}`, record.revokedAt);
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

/**
 * Workspace and agent keys: minted (the value shown once, stored as a hash), resolved on every
 * request that presents one, listed and revoked. Writes the `keys` and `keysByHash` tables and a
 * ledger record for each mint and revocation.
 */
export interface KeysService {
  /** Mints a key; `createdBy` is the actor as the ledger names it (user:…, key:…, operator). */
  mint(workspaceId: string, input: MintKeyInput, createdBy: string): Promise<KeyView & { key: string }>;
  /** The live key behind a presented value, or undefined (unknown, expired or revoked). */
  resolve(value: string): Promise<ResolvedKey | undefined>;
  /** The workspace's keys, a page at a time, never a value or a hash. */
  list(wid: string, options: { after?: string; limit: number }): Promise<{ data: KeyView[]; next: string | null }>;
  /** One agent's keys (revoked ones too, with revokedAt), oldest first: for its page in the console. */
  forAgent(wid: string, agentId: string): Promise<KeyView[]>;
  /** Revokes a key; `only.agentId` limits it to one agent's keys (404 for any other key). */
  revoke(wid: string, keyId: string, actor?: string, only?: { agentId?: string }): Promise<void>;
}
