import type { KeyObject } from 'node:crypto';
import { isoAt, type Clock } from '../lib/clock.js';
import type { SigningKeyRecord, SigningKeyUse, Store } from '../store/index.js';
import { generateSigningKey, publicKeyOf, toJwks, unsealPrivateKey } from './crypto.js';

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
const currentKidKey = (use: SigningKeyUse) => `${use}Kid`;

export function createSigningKeys(deps: { store: Store; masterKey: Buffer; clock: Clock }) {
  const { store, masterKey, clock } = deps;
  const t = store.tables;
  const unsealed = new Map<string, KeyObject>();

  const add = (use: SigningKeyUse): SigningKeyRecord => {
    const record = generateSigningKey(masterKey, use, clock.now());
    t.signingKeys.put(record.kid, record);
    t.meta.put(currentKidKey(use), record.kid);
    return record;
  };

  const all = (): SigningKeyRecord[] => t.signingKeys.scan([]).map((e) => e.value);

  const unsealedOf = (record: SigningKeyRecord): KeyObject => {
    let privateKey = unsealed.get(record.kid);
    if (!privateKey) {
      privateKey = unsealPrivateKey(record, masterKey);
      unsealed.set(record.kid, privateKey);
    }
    return privateKey;
  };

  return {
    /** The current key of a kind, created if the store has none. Only inside store.write(). */
    currentInWrite(use: SigningKeyUse): { record: SigningKeyRecord; privateKey: KeyObject } {
      const kid = t.meta.get(currentKidKey(use));
      const record = (typeof kid === 'string' ? t.signingKeys.get(kid) : undefined) ?? add(use);
      return { record, privateKey: unsealedOf(record) };
    },

    /** The current key's id alone, as of now (inside a write: as of that transaction). */
    currentKid(use: SigningKeyUse): string | undefined {
      const kid = t.meta.get(currentKidKey(use));
      return typeof kid === 'string' ? kid : undefined;
    },

    /** The current key read outside a write (to sign ahead of one), or undefined if none yet. */
    current(use: SigningKeyUse): { record: SigningKeyRecord; privateKey: KeyObject } | undefined {
      const kid = t.meta.get(currentKidKey(use));
      const record = typeof kid === 'string' ? t.signingKeys.get(kid) : undefined;
      return record ? { record, privateKey: unsealedOf(record) } : undefined;
    },

    /** Creates the receipt and ledger keys if they do not exist yet (first start, `svc init`). */
    async ensure(): Promise<void> {
      if (
        typeof t.meta.get(currentKidKey('receipt')) === 'string' &&
        typeof t.meta.get(currentKidKey('ledger')) === 'string'
      )
        return;
      await store.write(() => {
        for (const use of ['receipt', 'ledger'] as const) {
          if (typeof t.meta.get(currentKidKey(use)) !== 'string') add(use);
        }
      });
    },

    /** A new current key; the old one is retired, still published. Only inside store.write(). */
    rotateInWrite(use: SigningKeyUse): { added: SigningKeyRecord; retired: SigningKeyRecord | null } {
      const kid = t.meta.get(currentKidKey(use));
      const old = typeof kid === 'string' ? t.signingKeys.get(kid) : undefined;
      let retired: SigningKeyRecord | null = null;
      if (old) {
        retired = { ...old, retiredAt: isoAt(clock.now()) };
        t.signingKeys.put(old.kid, retired);
      }
      return { added: add(use), retired };
    },

    all,

    jwks() {
      return toJwks(all());
    },

    record(kid: string): SigningKeyRecord | undefined {
      return t.signingKeys.get(kid);
    },

    publicKey(kid: string): KeyObject | undefined {
      const record = t.signingKeys.get(kid);
      return record ? publicKeyOf(record) : undefined;
    },
  };
}

export type SigningKeys = ReturnType<typeof createSigningKeys>;
