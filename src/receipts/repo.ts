import type { Store } from '../store/index.js';

/**
 * The reads and writes of receipts: those seen online and those withdrawn (by `jti`, the action
 * id). The signing keys are src/signing/'s.
 */
export function receiptsRepo(store: Store) {
  const t = store.tables;
  return {
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
