import type { KeyObject } from 'node:crypto';
import { isoAt, type Clock } from '../lib/clock.js';
import { GenerationCache } from '../lib/generation-cache.js';
import type { Store } from '../store/index.js';
import type { SigningKeyRecord, SigningKeyUse } from './records.js';
import { generateSigningKey, publicKeyOf, toJwks, unsealPrivateKey, type Jwk } from './crypto.js';
import { signingKeysRepo } from './repo.js';

/**
 * The service's own signing keys: one current receipt key, one current ledger key, and one current
 * ES256 receipt key (the AP2 and ACP shapes), kept apart so that none can stand in for another
 * (the JWKS marks them `sig` and `ledger`, and each with its one `alg`).
 * Rules:
 * - Private halves are stored sealed with the master key and unsealed only in memory; they are
 *   never logged and no route returns them.
 * - Which key is current is read from the store at each use: `svc keys rotate-receipt-key` run by
 *   another process takes effect on the next signature. An unsealed key is kept in memory by kid:
 *   a kid names one immutable key, so that memo cannot go stale.
 * - Rotation retires the old key (it signs no more) but keeps publishing it, so receipts it
 *   signed keep verifying.
 * - Outside a write, the key set (every record, the JWKS, the revoked kids, which key is current
 *   per use) is cached in memory (docs/operations.md#what-the-server-caches), valid for one value of the `signingKeys`
 *   generation, which every write of a signing key or of the current kid bumps in its own
 *   transaction (repo.ts `putKey`, `setCurrentKid`), whichever process makes it (`svc keys
 *   rotate-receipt-key`, `revoke-receipt-key`). Each use reads that counter first (one store read),
 *   so a rotation signs the very next receipt with the new key and a revoked kid fails the very
 *   next verification. Inside a write the store is read directly and nothing is cached.
 */

/** A current key as its signer uses it: the record (its kid) and the unsealed private half. */
export interface CurrentKey {
  record: SigningKeyRecord;
  privateKey: KeyObject;
}

/**
 * The service's signing keys, for those who sign (receipts, the ledger's checkpoints) and those
 * who publish or check them (the JWKS, online receipt verification, the scorecard). Reads and
 * writes the `signingKeys` table and the meta keys `receiptKid`, `ledgerKid`, `receipt-es256Kid` (repo.ts), and
 * nothing else.
 */
export interface SigningKeys {
  /**
   * The current key of a use, created (and made current) if the store has none. Only inside
   * store.write(): reads the store in that write, and may write a new key in it.
   */
  currentInWrite(use: SigningKeyUse): Promise<CurrentKey>;
  /** The current key's id alone, as of now (inside a write: as of that transaction). One store read. */
  currentKid(use: SigningKeyUse): Promise<string | undefined>;
  /**
   * The current key read outside a write (to sign ahead of one), from the cached key set, or
   * undefined if there is none yet. Inside a write it reads the store directly. Writes nothing.
   */
  current(use: SigningKeyUse): Promise<CurrentKey | undefined>;
  /**
   * Creates the receipt, ledger and ES256 receipt keys that do not exist yet (first start, `svc
   * init`, a store from before ES256 keys): its own write.
   */
  ensure(): Promise<void>;
  /**
   * A new current key of a use; the old one is marked retired (it signs no more) but stays
   * published. Only inside store.write().
   */
  rotateInWrite(use: SigningKeyUse): Promise<{ added: SigningKeyRecord; retired: SigningKeyRecord | null }>;
  /**
   * Marks a key revoked (it leaves the JWKS; a receipt it signed answers `revoked` online) and
   * retired, keeping the dates it already has; returns when it was revoked. The caller decides
   * whether that key may be revoked. Only inside store.write().
   */
  revokeInWrite(record: SigningKeyRecord): Promise<string>;
  /** Every key record (public halves and sealed private halves), from the cached key set. */
  all(): Promise<readonly SigningKeyRecord[]>;
  /** The published key set: every key not revoked, receipt keys (Ed25519 and ES256) as use "sig", ledger keys as "ledger". */
  jwks(): Promise<{ keys: Jwk[] }>;
  /** What a receipt is verified against: the published keys and the revoked kids, from one key set. */
  verifyKeys(): Promise<{ jwks: { keys: Jwk[] }; revokedKids: ReadonlySet<string> }>;
  /** One key's record by its kid, read from the store. */
  record(kid: string): Promise<SigningKeyRecord | undefined>;
  /** One key's public half by its kid, read from the store. */
  publicKey(kid: string): Promise<KeyObject | undefined>;
}

/** The uses that always have a current key (first start, `svc init`, and a store made before a use existed). */
const ENSURED: readonly SigningKeyUse[] = ['receipt', 'ledger', 'receipt-es256'];

/** What the signing keys are made from: the store, the master key that seals them, the clock. */
export interface SigningKeysDeps {
  store: Store;
  masterKey: Buffer;
  clock: Clock;
}

/** The signing keys as the verifiers and signers use them, all from one set of reads. */
interface KeySet {
  readonly records: readonly SigningKeyRecord[];
  readonly jwks: { keys: Jwk[] };
  readonly revokedKids: ReadonlySet<string>;
  readonly current: Readonly<Partial<Record<SigningKeyUse, SigningKeyRecord>>>;
}

function keySetOf(records: SigningKeyRecord[], kids: Record<SigningKeyUse, string | undefined>): KeySet {
  for (const r of records) Object.freeze(r);
  const jwks = toJwks(records);
  for (const k of jwks.keys) Object.freeze(k);
  Object.freeze(jwks.keys);
  const byKid = (kid: string | undefined) => (kid === undefined ? undefined : records.find((r) => r.kid === kid));
  const receipt = byKid(kids.receipt);
  const ledger = byKid(kids.ledger);
  const es256 = byKid(kids['receipt-es256']);
  return Object.freeze({
    records: Object.freeze(records),
    jwks: Object.freeze(jwks),
    revokedKids: new Set(records.filter((k) => k.revokedAt !== null).map((k) => k.kid)),
    current: Object.freeze({
      ...(receipt ? { receipt } : {}),
      ...(ledger ? { ledger } : {}),
      ...(es256 ? { 'receipt-es256': es256 } : {}),
    }),
  });
}

export function createSigningKeys(deps: SigningKeysDeps): SigningKeys {
  const { store, masterKey, clock } = deps;
  const repo = signingKeysRepo(store);
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

  // The key set under one `signingKeys` generation (see the rules above): one entry.
  const sets = new GenerationCache<'set', KeySet>(1);
  const readSet = async (): Promise<KeySet> => {
    const [records, receipt, ledger, es256] = await Promise.all([
      repo.keys(),
      repo.currentKid('receipt'),
      repo.currentKid('ledger'),
      repo.currentKid('receipt-es256'),
    ]);
    return keySetOf(records, { receipt, ledger, 'receipt-es256': es256 });
  };
  const keySet = async (): Promise<KeySet> => {
    if (store.inWrite()) return readSet();
    // The counter before the records: a write landing after this read leaves the entry tagged
    // with the older generation, so the next use refills it.
    const generation = await repo.generation();
    const hit = sets.get(generation, 'set');
    if (hit) return hit;
    const fresh = await readSet();
    sets.set(generation, 'set', fresh);
    return fresh;
  };

  const all = async (): Promise<readonly SigningKeyRecord[]> => (await keySet()).records;

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
    async currentInWrite(use: SigningKeyUse): Promise<CurrentKey> {
      const record = (await currentRecord(use)) ?? (await add(use));
      return { record, privateKey: unsealedOf(record) };
    },

    currentKid(use: SigningKeyUse): Promise<string | undefined> {
      return repo.currentKid(use);
    },

    async current(use: SigningKeyUse): Promise<CurrentKey | undefined> {
      const record = store.inWrite() ? await currentRecord(use) : (await keySet()).current[use];
      return record ? { record, privateKey: unsealedOf(record) } : undefined;
    },

    async ensure(): Promise<void> {
      const kids = await Promise.all(ENSURED.map((use) => repo.currentKid(use)));
      if (kids.every((kid) => kid !== undefined)) return;
      await store.write(async () => {
        for (const use of ENSURED) {
          if ((await repo.currentKid(use)) === undefined) await add(use);
        }
      });
    },

    async rotateInWrite(use: SigningKeyUse): Promise<{ added: SigningKeyRecord; retired: SigningKeyRecord | null }> {
      const old = await currentRecord(use);
      let retired: SigningKeyRecord | null = null;
      if (old) {
        retired = { ...old, retiredAt: isoAt(clock.now()) };
        await repo.putKey(retired);
      }
      return { added: await add(use), retired };
    },

    async revokeInWrite(record: SigningKeyRecord): Promise<string> {
      const revokedAt = record.revokedAt ?? isoAt(clock.now());
      await repo.putKey({ ...record, revokedAt, retiredAt: record.retiredAt ?? revokedAt });
      return revokedAt;
    },

    all,

    async jwks(): Promise<{ keys: Jwk[] }> {
      return (await keySet()).jwks;
    },

    async verifyKeys(): Promise<{ jwks: { keys: Jwk[] }; revokedKids: ReadonlySet<string> }> {
      const set = await keySet();
      return { jwks: set.jwks, revokedKids: set.revokedKids };
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
