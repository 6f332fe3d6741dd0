import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { isoAt } from '../lib/clock.js';
import { sealBytes, unsealBytes } from '../lib/seal.js';
import type { AgentSigningKeyRecord } from './records.js';

/**
 * Agents' request-signing keys: making one, its sealing at rest, and its public JWK.
 *
 * Rules enforced:
 * - Ed25519 only. The kid is the RFC 7638 thumbprint (SHA-256, base64url) of the public JWK, as
 *   Web Bot Auth asks of `keyid`, so a kid names exactly one public key.
 * - The private half is stored only sealed (AES-256-GCM under a key derived from the master key
 *   for `agent-signing-key`), bound to the workspace, the agent and the kid: a sealed key copied
 *   onto another agent's record does not open. After unsealing it must still match the record's
 *   public key, or it is refused.
 * - No route, log or ledger record carries the private half.
 */

const PURPOSE = 'agent-signing-key';
const boundTo = (r: Pick<AgentSigningKeyRecord, 'workspaceId' | 'agentId' | 'kid'>) =>
  `${r.workspaceId}/${r.agentId}/${r.kid}`;

/** The public JWK as the directory publishes it. */
export interface DirectoryJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

function publicJwkOf(key: KeyObject): AgentSigningKeyRecord['publicJwk'] {
  const jwk = key.export({ format: 'jwk' });
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new Error('not an Ed25519 key');
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x };
}

/** RFC 7638 thumbprint of an Ed25519 public JWK (jose computes the canonical members). */
export async function thumbprintOf(jwk: { kty: string; crv: string; x: string }): Promise<string> {
  // jose is loaded on first use: the commands that only open the store never load it.
  const { calculateJwkThumbprint } = await import('jose');
  return calculateJwkThumbprint({ kty: jwk.kty, crv: jwk.crv, x: jwk.x }, 'sha256');
}

/** A new key for one agent, its private half sealed. Random: inside a write, a rerun makes another. */
export async function generateAgentKey(
  masterKey: Buffer,
  who: { workspaceId: string; agentId: string },
  nowMs: number,
): Promise<AgentSigningKeyRecord> {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const publicJwk = publicJwkOf(publicKey);
  const kid = await thumbprintOf(publicJwk);
  const der = privateKey.export({ format: 'der', type: 'pkcs8' });
  return {
    workspaceId: who.workspaceId,
    agentId: who.agentId,
    kid,
    publicJwk,
    sealedPrivateKey: sealBytes(masterKey, PURPOSE, boundTo({ ...who, kid }), der),
    createdAt: isoAt(nowMs),
    retiredAt: null,
  };
}

/** The private half; throws when the master key, the binding or any byte is not the sealer's. */
export function unsealAgentKey(record: AgentSigningKeyRecord, masterKey: Buffer): KeyObject {
  const der = unsealBytes(masterKey, PURPOSE, boundTo(record), record.sealedPrivateKey);
  const privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  if (privateKey.asymmetricKeyType !== 'ed25519' || publicJwkOf(createPublicKey(privateKey)).x !== record.publicJwk.x)
    throw new Error('agent signing key does not match its public key');
  return privateKey;
}

export function directoryJwk(record: AgentSigningKeyRecord): DirectoryJwk {
  return { kty: 'OKP', crv: 'Ed25519', x: record.publicJwk.x, kid: record.kid, alg: 'EdDSA', use: 'sig' };
}
