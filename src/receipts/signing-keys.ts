import type { KeyObject } from 'node:crypto';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import type { SigningKeyRecord, SigningKeyUse } from './records.js';
import { generateSigningKey, publicKeyOf, toJwks, unsealPrivateKey } from './crypto.js';
import { receiptsRepo } from './repo.js';

/**
 * The service's own signing keys: one current receipt key and one current ledger key, kept
 * apart so that neither can stand in for the other (the JWKS marks them `sig` and `ledger`).
 * Rules:
 * - Private halves are stored sealed with the master key and unsealed only in memory; they are
 *   never logged and no route returns them.
 * - Which key is current is read from the store at each use: `svc keys rotate-receipt-key` run by
 *   another process takes effect on the next signature. An unsealed key is kept in memory by kid:
 *   a kid names one immutable key, so that memo cannot go stale.
 * - Rotation retires the old key (it signs no more) but keeps publishing it, so receipts it
 *   signed keep verifying.
 */
export function createSigningKeys(deps: { store: Store; masterKey: Buffer; clock: Clock }) {
  const { store, masterKey, clock } = deps;
  const repo = receiptsRepo(store);
  const unsealed = new Map<string, KeyObject>();

  /**
   * A new current key. Inside store.write(): the key is made there (random), and a write run again
   * makes another; only the last run's is stored, and nothing outside the store has seen the others.
   */
  const add = async (use: SigningKeyUse): Promise<SigningKeyRecord> => {
    const record = generateSigningKey(masterKey, use, clock.now());
    await repo.putKey(record);
    await repo.setCurrentKid(use, record.kid);
    return record;
  };

  const all = (): Promise<SigningKeyRecord[]> => repo.keys();

  /** A kid names one immutable key, so this memo cannot go stale (nor be wrong after a rerun). */
  const unsealedOf = (record: SigningKeyRecord): KeyObject => {
    let privateKey = unsealed.get(record.kid);
    if (!privateKey) {
      privateKey = unsealPrivateKey(record, masterKey);
      unsealed.set(record.kid, privateKey);
    }
    return privateKey;
  };

  /** The current key's record, if the store names one and holds it. */
  const currentRecord = async (use: SigningKeyUse): Promise<SigningKeyRecord | undefined> => {
    const kid = await repo.currentKid(use);
    return kid === undefined ? undefined : repo.key(kid);
  };

  return {
    /** The current key of a kind, created if the store has none. Only inside store.write(). */
    async currentInWrite(use: SigningKeyUse): Promise<{ record: SigningKeyRecord; privateKey: KeyObject }> {
      const record = (await currentRecord(use)) ?? (await add(use));
      return { record, privateKey: unsealedOf(record) };
    },

    /** The current key's id alone, as of now (inside a write: as of that transaction). */
    currentKid(use: SigningKeyUse): Promise<string | undefined> {
      return repo.currentKid(use);
    },

    /** The current key read outside a write (to sign ahead of one), or undefined if none yet. */
    async current(use: SigningKeyUse): Promise<{ record: SigningKeyRecord; privateKey: KeyObject } | undefined> {
      const record = await currentRecord(use);
      return record ? { record, privateKey: unsealedOf(record) } : undefined;
    },

    /** Creates the receipt and ledger keys if they do not exist yet (first start, `svc init`). */
    async ensure(): Promise<void> {
      const kids = await Promise.all([repo.currentKid('receipt'), repo.currentKid('ledger')]);
      if (kids.every((kid) => kid !== undefined)) return;
      await store.write(async () => {
        for (const use of ['receipt', 'ledger'] as const) {
          if ((await repo.currentKid(use)) === undefined) await add(use);
        }
      });
    },

    /** A new current key; the old one is retired, still published. Only inside store.write(). */
    async rotateInWrite(use: SigningKeyUse): Promise<{ added: SigningKeyRecord; retired: SigningKeyRecord | null }> {
      const old = await currentRecord(use);
      let retired: SigningKeyRecord | null = null;
      if (old) {
        retired = { ...old, retiredAt: isoAt(clock.now()) };
        await repo.putKey(retired);
      }
      return { added: await add(use), retired };
    },

    all,

    async jwks() {
      return toJwks(await all());
    },

    record(kid: string): Promise<SigningKeyRecord | undefined> {
      return repo.key(kid);
    },

    async publicKey(kid: string): Promise<KeyObject | undefined> {
      const record = await repo.key(kid);
      return record ? publicKeyOf(record) : undefined;
    },
  };
}

export type SigningKeys = ReturnType<typeof createSigningKeys>;
