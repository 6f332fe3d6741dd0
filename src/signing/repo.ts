import { bumpGeneration, readGeneration } from '../store/generations.js';
import type { Store } from '../store/index.js';
import type { SigningKeyRecord, SigningKeyUse } from './records.js';

/** The meta key that names a use's current signing key. */
const currentKidKey = (use: SigningKeyUse) => `${use}Kid`;

/**
 * The reads and writes of the service's signing keys: the keys (kid -> record) and which one is
 * current per use (meta `receiptKid`, `ledgerKid`). Every write of a signing key or of which one is
 * current bumps the `signingKeys` generation in the same transaction: service.ts caches the key set
 * behind it. The only writer of the `signingKeys` table.
 */
export function signingKeysRepo(store: Store) {
  const t = store.tables;
  return {
    async currentKid(use: SigningKeyUse): Promise<string | undefined> {
      const kid = await t.meta.get(currentKidKey(use));
      return typeof kid === 'string' ? kid : undefined;
    },
    /** Only inside store.write(). */
    async setCurrentKid(use: SigningKeyUse, kid: string): Promise<void> {
      await t.meta.put(currentKidKey(use), kid);
      await bumpGeneration(t, 'signingKeys');
    },
    /** The `signingKeys` generation: one read that says whether the cached key set is current. */
    generation(): Promise<number> {
      return readGeneration(t, 'signingKeys');
    },
    key(kid: string): Promise<SigningKeyRecord | undefined> {
      return t.signingKeys.get(kid);
    },
    /** Only inside store.write(). */
    async putKey(record: SigningKeyRecord): Promise<void> {
      await t.signingKeys.put(record.kid, record);
      await bumpGeneration(t, 'signingKeys');
    },
    async keys(): Promise<SigningKeyRecord[]> {
      return (await t.signingKeys.scan([])).map((e) => e.value);
    },
  };
}
