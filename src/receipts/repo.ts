import type { Store } from '../store/index.js';
import type { SigningKeyRecord, SigningKeyUse } from './records.js';

/** The meta key that names a use's current signing key. */
const currentKidKey = (use: SigningKeyUse) => `${use}Kid`;

/**
 * The reads and writes of receipts and the service's signing keys: the keys (kid -> record), which
 * one is current per use (meta `receiptKid`, `ledgerKid`), and the receipts seen online or
 * withdrawn (by `jti`, the action id).
 */
export function receiptsRepo(store: Store) {
  const t = store.tables;
  return {
    async currentKid(use: SigningKeyUse): Promise<string | undefined> {
      const kid = await t.meta.get(currentKidKey(use));
      return typeof kid === 'string' ? kid : undefined;
    },
    /** Only inside store.write(). */
    setCurrentKid(use: SigningKeyUse, kid: string): Promise<void> {
      return t.meta.put(currentKidKey(use), kid);
    },
    key(kid: string): Promise<SigningKeyRecord | undefined> {
      return t.signingKeys.get(kid);
    },
    /** Only inside store.write(). */
    putKey(record: SigningKeyRecord): Promise<void> {
      return t.signingKeys.put(record.kid, record);
    },
    async keys(): Promise<SigningKeyRecord[]> {
      return (await t.signingKeys.scan([])).map((e) => e.value);
    },
    seen(jti: string): Promise<boolean> {
      return t.receiptsSeen.has(jti);
    },
    withdrawn(jti: string): Promise<boolean> {
      return t.receiptsWithdrawn.has(jti);
    },
    /** Only inside store.write(). */
    markSeen(jti: string, at: string): Promise<void> {
      return t.receiptsSeen.put(jti, at);
    },
    /** Every workspace's id: a key rotation or revocation is recorded in each one's ledger. */
    async workspaceIds(): Promise<string[]> {
      return (await t.workspaces.scan([])).map((e) => e.value.id);
    },
  };
}
