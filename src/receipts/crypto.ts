import { sign, type KeyObject } from 'node:crypto';
import { inSpan, inSpanSync } from '../lib/tracing.js';
import { checkReceiptClaims, type ReceiptClaims } from './types.js';

/**
 * Receipt signing, with a receipt key of the service's signing keys (src/signing/).
 *
 * Rules enforced:
 * - A receipt's protected header is exactly {"alg":"EdDSA","kid":<kid>,"typ":"JWT"} in that
 *   order; its payload is JSON.stringify of claims that pass the receipt claims check (a receipt
 *   that verifiers would call malformed is never signed). Ed25519 is deterministic, so the same
 *   key and claims give the same bytes (known-answer tests rely on it).
 */

export type { ReceiptClaims } from './types.js';

const b64url = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

function signingInputOf(privateKey: KeyObject, kid: string, claims: ReceiptClaims): string {
  if (privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'ed25519')
    throw new TypeError('a receipt is signed with an Ed25519 private key');
  if (typeof kid !== 'string' || kid === '')
    throw new TypeError('a receipt names its key: kid must be a non-empty string');
  const checked = checkReceiptClaims(claims);
  if (!checked.ok) throw new TypeError(`receipt claims refused: ${checked.problem}`);
  return `${b64url(JSON.stringify({ alg: 'EdDSA', kid, typ: 'JWT' }))}.${b64url(JSON.stringify(claims))}`;
}

export function signReceipt(privateKey: KeyObject, kid: string, claims: ReceiptClaims): string {
  return inSpanSync('receipt.sign', { attributes: { 'svc.signing.kid': kid } }, () => {
    const signingInput = signingInputOf(privateKey, kid, claims);
    const signature = sign(null, Buffer.from(signingInput, 'ascii'), privateKey);
    return `${signingInput}.${signature.toString('base64url')}`;
  });
}

/**
 * The same receipt, byte for byte (Ed25519 is deterministic), signed on libuv's thread pool so
 * that the event loop serves other requests meanwhile.
 */
export function signReceiptAsync(privateKey: KeyObject, kid: string, claims: ReceiptClaims): Promise<string> {
  const signingInput = signingInputOf(privateKey, kid, claims);
  return inSpan(
    'receipt.sign',
    { attributes: { 'svc.signing.kid': kid } },
    () =>
      new Promise((resolve, reject) => {
        sign(null, Buffer.from(signingInput, 'ascii'), privateKey, (err, signature) => {
          if (err) reject(err);
          else resolve(`${signingInput}.${signature.toString('base64url')}`);
        });
      }),
  );
}
