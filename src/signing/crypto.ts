import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { deriveKey } from '../lib/seal.js';
import { isoAt } from '../lib/clock.js';
import type { SigningKeyRecord, SigningKeyUse } from './records.js';

/**
 * The service's signing keys (receipt and ledger): making one, its sealing at rest, and the
 * published key set. What a key signs is its user's: receipts/crypto.ts signs receipts,
 * ledger/note.ts the ledger's checkpoints.
 *
 * Rules enforced:
 * - Keys are Ed25519 only. A key's id (kid) is the RFC 7638 thumbprint (SHA-256, base64url) of
 *   its public JWK, so a kid names exactly one public key.
 * - The private key is stored only sealed: AES-256-GCM under a key derived from the master key
 *   for its use (`signing-key:receipt` or `signing-key:ledger`), with a fresh 12-byte IV and the
 *   kid as additional data. A record moved to the other use, given another kid, or with any
 *   byte changed does not unseal; after unsealing, the private key must still match the record's
 *   public JWK and kid, or it is refused.
 * - The published key set holds every key not revoked (retired keys still verify old receipts);
 *   receipt keys are published with use "sig", ledger keys with use "ledger", so that a ledger
 *   key can never verify a receipt (verifiers accept only "sig").
 */

export type { SigningKeyRecord, SigningKeyUse } from './records.js';

export interface Jwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig' | 'ledger';
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const USES: readonly SigningKeyUse[] = ['receipt', 'ledger'];
const UNSEAL_FAILED = 'signing key cannot be unsealed: wrong master key, or the key record was altered';

const sealKey = (masterKey: Buffer, use: SigningKeyUse) => deriveKey(masterKey, `signing-key:${use}`);

/** RFC 7638: the required members of an OKP key (crv, kty, x) in lexicographic order. */
function thumbprint(jwk: { crv: string; kty: string; x: string }): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x });
  return createHash('sha256').update(canonical).digest('base64url');
}

function publicJwkOf(key: KeyObject): SigningKeyRecord['publicJwk'] {
  const jwk = key.export({ format: 'jwk' });
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new Error('not an Ed25519 key');
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x };
}

export function generateSigningKey(masterKey: Buffer, use: SigningKeyUse, nowMs: number): SigningKeyRecord {
  if (!USES.includes(use)) throw new TypeError(`signing key use must be one of ${USES.join(', ')}`);
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const publicJwk = publicJwkOf(publicKey);
  const kid = thumbprint(publicJwk);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', sealKey(masterKey, use), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(kid, 'utf8'));
  const der = privateKey.export({ format: 'der', type: 'pkcs8' });
  const sealed = Buffer.concat([iv, cipher.update(der), cipher.final(), cipher.getAuthTag()]);
  return {
    kid,
    use,
    publicJwk,
    sealedPrivateKey: sealed.toString('base64url'),
    createdAt: isoAt(nowMs),
    retiredAt: null,
    revokedAt: null,
  };
}

export function unsealPrivateKey(record: SigningKeyRecord, masterKey: Buffer): KeyObject {
  let privateKey: KeyObject;
  try {
    const sealed = Buffer.from(record.sealedPrivateKey, 'base64url');
    if (sealed.length <= IV_BYTES + TAG_BYTES || sealed.toString('base64url') !== record.sealedPrivateKey)
      throw new Error('bad length or encoding');
    const decipher = createDecipheriv('aes-256-gcm', sealKey(masterKey, record.use), sealed.subarray(0, IV_BYTES), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(Buffer.from(record.kid, 'utf8'));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    const der = Buffer.concat([
      decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)),
      decipher.final(),
    ]);
    privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } catch (cause) {
    throw new Error(UNSEAL_FAILED, { cause });
  }
  // The seal binds the private key to the kid; these bind the kid to the record's public key.
  const derived = privateKey.asymmetricKeyType === 'ed25519' ? publicJwkOf(createPublicKey(privateKey)) : null;
  if (!derived || derived.x !== record.publicJwk?.x || thumbprint(derived) !== record.kid) {
    throw new Error(`${UNSEAL_FAILED} (its private key does not match its public key or kid)`);
  }
  return privateKey;
}

export function publicKeyOf(record: SigningKeyRecord): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: record.publicJwk.x }, format: 'jwk' });
}

export function toJwks(records: readonly SigningKeyRecord[]): { keys: Jwk[] } {
  return {
    keys: records
      .filter((r) => !r.revokedAt)
      .map((r) => ({
        kty: 'OKP',
        crv: 'Ed25519',
        x: r.publicJwk.x,
        kid: r.kid,
        alg: 'EdDSA',
        use: r.use === 'receipt' ? 'sig' : 'ledger',
      })),
  };
}
