import { execFile } from 'node:child_process';
import { createHash, createPrivateKey, generateKeyPairSync, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SDJwtInstance } from '@sd-jwt/core';
import { ES256, digest, generateSalt } from '@sd-jwt/crypto-nodejs';

/**
 * A test AP2 issuer and agent, made with the maintained @sd-jwt packages: an issuer (a wallet or
 * agent provider) signing open Payment Mandates (ES256, `kid` or `x5c`), and an agent holding the
 * key bound in their `cnf`, signing closed mandates (`typ` kb+sd-jwt) with `sd_hash` over the open
 * one, as AP2 v0.2's delegate SD-JWT chains are made.
 */

export type Jwk = Record<string, unknown>;

/** A JWK's public members only (what svc takes as a holder key or a trusted issuer key). */
export const publicOnly = (jwk: Jwk, kid?: string): Jwk => ({
  kty: jwk.kty,
  crv: jwk.crv,
  x: jwk.x,
  y: jwk.y,
  ...(kid ? { kid } : {}),
});

export const sha256 = (text: string) => createHash('sha256').update(text, 'ascii').digest('base64url');

export interface KeyPair {
  publicKey: Jwk;
  privateKey: Jwk;
}

export const newKeys = async (): Promise<KeyPair> => (await ES256.generateKeyPair()) as unknown as KeyPair;

/** A signer over a node KeyObject (the x5c leaf's key), as @sd-jwt expects: base64url raw ECDSA. */
const keyObjectSigner = (key: KeyObject) => async (data: string) =>
  sign('sha256', Buffer.from(data), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url');

export interface OpenMandateOptions {
  constraints: unknown[];
  cnf: Jwk;
  expSeconds?: number;
  iatSeconds: number;
  iss?: string;
  vct?: string;
  extra?: Record<string, unknown>;
  /** Which items of `allowed_payees` (constraint index) are disclosable array items. */
  payeesAt?: number;
}

/** An open Payment Mandate: `delegate_payload[0]` the mandate content, itself selectively disclosed. */
export async function issueOpen(
  signer: { jwk?: Jwk; keyObject?: KeyObject; header: Record<string, unknown> },
  o: OpenMandateOptions,
): Promise<string> {
  const sd = new SDJwtInstance({
    signer: signer.keyObject ? keyObjectSigner(signer.keyObject) : await ES256.getSigner(signer.jwk!),
    signAlg: 'ES256',
    hasher: digest,
    hashAlg: 'sha-256',
    saltGenerator: generateSalt,
  });
  const content = {
    vct: o.vct ?? 'mandate.payment.open.1',
    constraints: o.constraints,
    cnf: { jwk: o.cnf },
    iat: o.iatSeconds,
    ...(o.expSeconds !== undefined ? { exp: o.expSeconds } : {}),
    ...o.extra,
  };
  const inner =
    o.payeesAt !== undefined
      ? { constraints: { [o.payeesAt]: { allowed: { _sd: [0, 1, 2].slice(0, payeesCount(o)) } } } }
      : {};
  return sd.issue(
    { iss: o.iss ?? 'https://wallet.example', iat: o.iatSeconds, delegate_payload: [content] } as never,
    { delegate_payload: { _sd: [0], 0: inner } } as never,
    { header: { typ: 'example+sd-jwt', ...signer.header } },
  );
}

const payeesCount = (o: OpenMandateOptions): number =>
  ((o.constraints[o.payeesAt!] as { allowed: unknown[] }).allowed ?? []).length;

export interface ClosedMandateOptions {
  open: string;
  holder: Jwk;
  aud: string;
  nonce: string;
  iatSeconds: number;
  amount: number;
  currency: string;
  website: string;
  extra?: Record<string, unknown>;
  sdHash?: string;
}

/** A closed Payment Mandate signed by the agent's key, bound to `open` by `sd_hash`. */
export async function issueClosed(o: ClosedMandateOptions): Promise<string> {
  const sd = new SDJwtInstance({
    signer: await ES256.getSigner(o.holder),
    signAlg: 'ES256',
    hasher: digest,
    hashAlg: 'sha-256',
    saltGenerator: generateSalt,
  });
  const content = {
    vct: 'mandate.payment.1',
    transaction_id: sha256(`checkout-${o.nonce}`),
    payee: { id: 'm1', name: 'Merchant', website: o.website },
    payment_amount: { amount: o.amount, currency: o.currency },
    payment_instrument: { id: 'card-1', type: 'card', description: 'Card 4242' },
    ...o.extra,
  };
  return sd.issue(
    {
      iat: o.iatSeconds,
      aud: o.aud,
      nonce: o.nonce,
      sd_hash: o.sdHash ?? sha256(o.open),
      delegate_payload: [content],
    } as never,
    { delegate_payload: { _sd: [0] } } as never,
    { header: { typ: 'kb+sd-jwt' } },
  );
}

/** The chain an agent presents: the open mandate, then `~`, then the closed one. */
export const chain = (open: string, closed: string) => `${open}~${closed}`;

/** An Ed25519 key pair, for algorithm-confusion cases. */
export const ed25519 = () => generateKeyPairSync('ed25519');

const run = promisify(execFile);

/** A leaf certificate's private key and its DER (base64, as `x5c` carries it). */
export interface Leaf {
  key: KeyObject;
  der: string;
}

/**
 * A certificate root and a leaf it signed (P-256, made by the machine's openssl), and a leaf of
 * another root: what an issuer trusted by `x5cRoots` signs with.
 */
export async function certificates(): Promise<{ rootPem: string; leaf: Leaf; strangerLeaf: Leaf }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-ap2-pki-'));
  try {
    const made = async (name: string, issuerName?: string): Promise<void> => {
      const key = join(dir, `${name}.key`);
      const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key];
      if (!issuerName) {
        await run('openssl', [
          'req',
          '-x509',
          ...ec,
          '-out',
          join(dir, `${name}.pem`),
          '-subj',
          `/CN=${name}`,
          '-days',
          '30',
        ]);
        return;
      }
      await run('openssl', ['req', ...ec, '-out', join(dir, `${name}.csr`), '-subj', `/CN=${name}`]);
      await run('openssl', [
        'x509',
        '-req',
        '-in',
        join(dir, `${name}.csr`),
        '-CA',
        join(dir, `${issuerName}.pem`),
        '-CAkey',
        join(dir, `${issuerName}.key`),
        '-CAcreateserial',
        '-out',
        join(dir, `${name}.pem`),
        '-days',
        '30',
      ]);
    };
    const leafOf = async (name: string): Promise<Leaf> => ({
      key: createPrivateKey(await readFile(join(dir, `${name}.key`))),
      der: new X509Certificate(await readFile(join(dir, `${name}.pem`))).raw.toString('base64'),
    });
    await made('root');
    await made('leaf', 'root');
    await made('other-root');
    await made('stranger', 'other-root');
    return {
      rootPem: await readFile(join(dir, 'root.pem'), 'utf8'),
      leaf: await leafOf('leaf'),
      strangerLeaf: await leafOf('stranger'),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
