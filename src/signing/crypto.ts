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
import type { SigningKeyRecord, SigningKeyUse, SigningPublicJwk } from './records.js';

/**
 * The service's signing keys (receipt and ledger): making one, its sealing at rest, and the
 * published key set. What a key signs is its user's: receipts/crypto.ts signs receipts,
 * ledger/note.ts the ledger's checkpoints.
 *
 * Rules enforced:
 * - Receipt and ledger keys are Ed25519; `receipt-es256` keys (the protocol receipts: AP2, ACP)
 *   are ECDSA P-256, and nothing else. A key's id (kid) is the RFC 7638 thumbprint (SHA-256,
 *   base64url) of its public JWK, so a kid names exactly one public key.
 * - The private key is stored only sealed: AES-256-GCM under a key derived from the master key
 *   for its use (`signing-key:receipt`, `signing-key:ledger`, `signing-key:receipt-es256`), with a fresh 12-byte IV and the
 *   kid as additional data. A record moved to the other use, given another kid, or with any
 *   byte changed does not unseal; after unsealing, the private key must still match the record's
 *   public JWK and kid, or it is refused.
 * - The published key set holds every key not revoked (retired keys still verify old receipts);
 *   receipt keys (both kinds) are published with use "sig", ledger keys with use "ledger", so
 *   that a ledger key can never verify a receipt (verifiers accept only "sig"). Each published key
 *   states its one algorithm (`EdDSA` or `ES256`), which verifiers hold it to.
 */

export type { SigningKeyRecord, SigningKeyUse, SigningPublicJwk } from './records.js';

export type Jwk =
  | { kty: 'OKP'; crv: 'Ed25519'; x: string; kid: string; alg: 'EdDSA'; use: 'sig' | 'ledger' }
  | { kty: 'EC'; crv: 'P-256'; x: string; y: string; kid: string; alg: 'ES256'; use: 'sig' };

const IV_BYTES = 12;
const TAG_BYTES = 16;
const USES: readonly SigningKeyUse[] = ['receipt', 'ledger', 'receipt-es256'];
const UNSEAL_FAILED = 'signing key cannot be unsealed: wrong master key, or the key record was altered';

const sealKey = (masterKey: Buffer, use: SigningKeyUse) => deriveKey(masterKey, `signing-key:${use}`);

/** RFC 7638: the required members of the key (OKP: crv, kty, x; EC: crv, kty, x, y) in lexicographic order. */
function thumbprint(jwk: SigningPublicJwk): string {
  const canonical =
    jwk.kty === 'EC'
      ? JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y })
      : JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x });
  return createHash('sha256').update(canonical).digest('base64url');
}

/** The one key type each use has. */
const isEs256 = (use: SigningKeyUse) => use === 'receipt-es256';

function publicJwkOf(key: KeyObject, use: SigningKeyUse): SigningPublicJwk {
  const jwk = key.export({ format: 'jwk' });
  if (isEs256(use)) {
    if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.x !== 'string' || typeof jwk.y !== 'string')
      throw new Error('not a P-256 key');
    return { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
  }
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new Error('not an Ed25519 key');
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x };
}

function generatePair(use: SigningKeyUse): { publicKey: KeyObject; privateKey: KeyObject } {
  return isEs256(use) ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
}

/** Whether the unsealed private key is of the type its use has. */
const rightType = (key: KeyObject, use: SigningKeyUse) =>
  isEs256(use)
    ? key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1'
    : key.asymmetricKeyType === 'ed25519';

const samePublic = (a: SigningPublicJwk, b: SigningPublicJwk | undefined) =>
  b !== undefined && a.kty === b.kty && a.x === b.x && (a.kty !== 'EC' || (b.kty === 'EC' && a.y === b.y));

export function generateSigningKey(masterKey: Buffer, use: SigningKeyUse, nowMs: number): SigningKeyRecord {
  if (!USES.includes(use)) throw new TypeError(`signing key use must be one of ${USES.join(', ')}`);
  const { publicKey, privateKey } = generatePair(use);
  const publicJwk = publicJwkOf(publicKey, use);
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
  const derived = rightType(privateKey, record.use) ? publicJwkOf(createPublicKey(privateKey), record.use) : null;
  if (!derived || !samePublic(derived, record.publicJwk) || thumbprint(derived) !== record.kid) {
    throw new Error(`${UNSEAL_FAILED} (its private key does not match its public key or kid)`);
  }
  return privateKey;
}

export function publicKeyOf(record: SigningKeyRecord): KeyObject {
  const jwk = record.publicJwk;
  return createPublicKey({
    key: jwk.kty === 'EC' ? { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y } : { kty: 'OKP', crv: 'Ed25519', x: jwk.x },
    format: 'jwk',
  });
}

function jwkOf(r: SigningKeyRecord): Jwk {
  const jwk = r.publicJwk;
  if (jwk.kty === 'EC') return { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y, kid: r.kid, alg: 'ES256', use: 'sig' };
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x, kid: r.kid, alg: 'EdDSA', use: r.use === 'ledger' ? 'ledger' : 'sig' };
}

export function toJwks(records: readonly SigningKeyRecord[]): { keys: Jwk[] } {
  return { keys: records.filter((r) => !r.revokedAt).map(jwkOf) };
}
