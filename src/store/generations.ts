import type { Tables } from './types.js';

/**
 * Generation counters (docs/operations.md): the one thing a process may check to keep an in-memory
 * cache of values another process or instance can change. Each kind below names the records it
 * covers; EVERY write of such a record bumps that kind's counter in its own transaction (through
 * its domain's repo), so a cache that reads the counter first, in one store read, and finds it
 * unchanged holds exactly what the store holds. A counter never goes down; a missing one is 0.
 *
 * - `keys`: workspace and agent keys (keys, keysByHash) and agents (their removal, their holds):
 *   keys/repo.ts `put`, agents/repo.ts `put`, killswitch/repo.ts `putAgent`.
 * - `integrations`: inbound integration settings and secrets (integrations): integrations/repo.ts
 *   `putIntegration`.
 * - `signingKeys`: receipt and ledger signing keys (signingKeys) and which one is current (meta
 *   `receiptKid`, `ledgerKid`): signing/repo.ts `putKey`, `setCurrentKid`.
 */
export type GenerationKind = 'keys' | 'integrations' | 'signingKeys';

/** The counter of `kind` (0 before its first bump). Inside a write: the write's own view. */
export async function readGeneration(t: Tables, kind: GenerationKind): Promise<number> {
  return (await t.generations.get(kind)) ?? 0;
}

/** One more on `kind`'s counter. Only inside store.write(), in the write that changes the records. */
export async function bumpGeneration(t: Tables, kind: GenerationKind): Promise<void> {
  await t.generations.put(kind, ((await t.generations.get(kind)) ?? 0) + 1);
}
