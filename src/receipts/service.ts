import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Ledger } from '../ledger/service.js';
import type { Store } from '../store/index.js';
import type { SigningKeys } from '../signing/service.js';
import { signReceipt, signReceiptAsync, type ReceiptClaims } from './crypto.js';
import { verifyReceipt, type VerifyResult } from './verify.js';
import { receiptsRepo } from './repo.js';

/**
 * Receipts (docs/gate.md#receipts): a compact JWS over the claims of an allowed payment.
 * Rules:
 * - Signed with the current receipt key only (never the ledger key), inside the transaction
 *   that stores the action, so an action and its receipt exist together or not at all.
 * - `jti` is the action id; `exp` is `iat` plus the configured lifetime.
 * - Online verification trusts exactly the keys in the store that are not revoked, and marks
 *   the receipt seen: from the second check on, `replayed` is true. An invalid receipt is
 *   never marked. A receipt withdrawn because its action failed or was cancelled (before any
 *   online check) answers `revoked`; offline verifiers cannot know of that withdrawal.
 */
export interface OnlineVerifyResult {
  valid: boolean;
  claims: ReceiptClaims | null;
  reason: VerifyResult['reason'];
  replayed: boolean;
}

/** A receipt signed ahead of its transaction, and the key that signed it. */
export interface Presigned {
  kid: string;
  receipt: string;
}

/**
 * What a receipt is signed over: an allowed payment's action id, agent, action type and payment
 * (the gate's action record has these fields). A receipt is only signed for an action with a payment.
 */
export interface ReceiptSubject {
  id: string;
  agentId: string;
  type: string;
  payment: { amount: number; currency: string; merchant?: string } | null;
  /** The 402 payment challenge the payment was read from: its hash is the receipt's `challengeHash`. */
  challenge?: { hash: string } | null;
}

/**
 * Receipts: signing them for the gate's allowed payments, the receipt key's rotation and
 * revocation, and their online verification. Reads the signing keys (src/signing/) and writes them
 * only through them; writes `receiptsSeen`; records key changes in every workspace's ledger.
 */
export interface Receipts {
  /**
   * Signs, on the thread pool and outside any transaction, the receipt an action will carry if
   * its transaction allows it: the event loop and the write lock are not held for a signature.
   * Null when there is no receipt key yet. Reads the cached key set; writes nothing.
   */
  presign(action: ReceiptSubject, hum: boolean, atMs: number): Promise<Presigned | null>;
  /**
   * The receipt of an allowed action. Only inside store.write(). A receipt signed ahead is used
   * when the key that signed it is still the current one; otherwise it is signed here (Ed25519 is
   * deterministic: a write run again signs the same claims to the same receipt), with the key
   * created here if the store has none yet.
   */
  issueInWrite(action: ReceiptSubject, hum: boolean, atMs: number, presigned?: Presigned | null): Promise<string>;
  /**
   * The current receipt key's id as the store holds it (inside a write, as that write reads it):
   * what `issueInWrite` reads first, for a caller that reads its keys ahead. Writes nothing.
   */
  currentKid(): Promise<string | undefined>;
  /**
   * A new receipt key; the old one is retired but still published. Its own write, which records
   * `receipt_key.rotated` in every workspace's ledger.
   */
  rotateKey(actor: string): Promise<{ kid: string; retiredKid: string | null; createdAt: string }>;
  /**
   * Revokes a receipt key (a compromised one): it leaves the JWKS and online checks of its
   * receipts answer `revoked`. The current key cannot be revoked (403 forbidden: rotate first); an
   * unknown kid or a ledger key is 404 not_found. Its own write, which records
   * `receipt_key.revoked` in every workspace's ledger.
   */
  revokeKey(kid: string, actor: string): Promise<{ kid: string; revokedAt: string }>;
  /**
   * Checks a receipt against the keys in the store that are not revoked, and marks it seen (from
   * the second check on, `replayed` is true); an invalid receipt is never marked, and a withdrawn
   * one answers `revoked`. Writes `receiptsSeen` once per receipt.
   */
  verifyOnline(token: string): Promise<OnlineVerifyResult>;
}

/** What receipts are made from. `issuer` is read at each signature (the server's public address). */
export interface ReceiptsDeps {
  store: Store;
  clock: Clock;
  signingKeys: SigningKeys;
  ledger: Ledger;
  ttlSeconds: number;
  issuer: () => string;
}

export function createReceipts(deps: ReceiptsDeps): Receipts {
  const { store, clock, signingKeys } = deps;
  const repo = receiptsRepo(store);
  const claimsOf = (action: ReceiptSubject, hum: boolean, atMs: number): ReceiptClaims => {
    const iat = Math.floor(atMs / 1000);
    return {
      iss: deps.issuer(),
      sub: action.agentId,
      act: action.id,
      typ: action.type,
      amt: action.payment!.amount,
      cur: action.payment!.currency,
      mer: action.payment!.merchant ?? '',
      hum,
      iat,
      exp: iat + deps.ttlSeconds,
      jti: action.id,
      ...(action.challenge ? { challengeHash: action.challenge.hash } : {}),
    };
  };
  return {
    async presign(action: ReceiptSubject, hum: boolean, atMs: number): Promise<Presigned | null> {
      const key = await signingKeys.current('receipt');
      if (!key) return null;
      return {
        kid: key.record.kid,
        receipt: await signReceiptAsync(key.privateKey, key.record.kid, claimsOf(action, hum, atMs)),
      };
    },

    currentKid() {
      return signingKeys.currentKid('receipt');
    },

    async issueInWrite(
      action: ReceiptSubject,
      hum: boolean,
      atMs: number,
      presigned: Presigned | null = null,
    ): Promise<string> {
      if (presigned && (await signingKeys.currentKid('receipt')) === presigned.kid) return presigned.receipt;
      const { record, privateKey } = await signingKeys.currentInWrite('receipt');
      return signReceipt(privateKey, record.kid, claimsOf(action, hum, atMs));
    },

    async rotateKey(actor: string): Promise<{ kid: string; retiredKid: string | null; createdAt: string }> {
      return store.write(async () => {
        const { added, retired } = await signingKeys.rotateInWrite('receipt');
        for (const wid of await repo.workspaceIds()) {
          await deps.ledger.record({
            workspaceId: wid,
            actor,
            kind: 'receipt_key.rotated',
            subject: added.kid,
            data: { retiredKid: retired?.kid ?? null },
          });
        }
        return { kid: added.kid, retiredKid: retired?.kid ?? null, createdAt: added.createdAt };
      });
    },

    async revokeKey(kid: string, actor: string): Promise<{ kid: string; revokedAt: string }> {
      return store.write(async () => {
        const record = await signingKeys.record(kid);
        if (!record || record.use !== 'receipt') throw new AppError('not_found', { message: `No receipt key ${kid}.` });
        if ((await signingKeys.currentKid('receipt')) === kid) {
          throw new AppError('forbidden', {
            message: `${kid} is the current receipt key.`,
            fix: 'Run svc keys rotate-receipt-key first, then revoke the old key.',
          });
        }
        const revokedAt = await signingKeys.revokeInWrite(record);
        for (const wid of await repo.workspaceIds()) {
          await deps.ledger.record({ workspaceId: wid, actor, kind: 'receipt_key.revoked', subject: kid, data: {} });
        }
        return { kid, revokedAt };
      });
    },

    async verifyOnline(token: string): Promise<OnlineVerifyResult> {
      // The key set and the revoked kids, from the cached key set (src/signing/service.ts: one read of its counter).
      const result = await verifyReceipt(token, await signingKeys.verifyKeys(), clock.now());
      if (!result.valid || !result.claims)
        return { valid: false, claims: null, reason: result.reason, replayed: false };
      const jti = result.claims.jti;
      const withdrawn = { valid: false, claims: null, reason: 'revoked' as const, replayed: false };
      // Seen before: nothing to write, and nothing more to read (a receipt once seen is never
      // withdrawn, so a replayed check, the common one, costs one read).
      if (await repo.seen(jti)) return { valid: true, claims: result.claims, reason: null, replayed: true };
      if (await repo.withdrawn(jti)) return withdrawn;
      // Inside the write, against a settlement racing this check: one of them comes first.
      const outcome = await store.write(async () => {
        if (await repo.withdrawn(jti)) return 'withdrawn' as const;
        if (await repo.seen(jti)) return 'replayed' as const;
        await repo.markSeen(jti, isoAt(clock.now()));
        return 'first' as const;
      });
      if (outcome === 'withdrawn') return withdrawn;
      const replayed = outcome === 'replayed';
      return { valid: true, claims: result.claims, reason: null, replayed };
    },
  };
}
