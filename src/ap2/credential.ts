import { createHash, X509Certificate, type KeyObject } from 'node:crypto';
import { SDJwt } from '@sd-jwt/core';
import { digest } from '@sd-jwt/crypto-nodejs';
import {
  calculateJwkThumbprint,
  compactVerify,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  importJWK,
} from 'jose';
import { AppError } from '../errors/app-error.js';
import type { PublicJwk, TrustedIssuer } from './records.js';
import { MAX_CREDENTIAL_CHARS } from './schemas.js';

/**
 * Reading and verifying AP2 mandates as SD-JWTs (docs/ap2.md#what-svc-verifies), each check a small
 * function. A chain is tokens joined by `~~` (the Delegate SD-JWT serialisation AP2 v0.2 uses): the
 * issuer-signed open mandate, then the agent-signed closed mandate (`typ` `kb+sd-jwt`) whose
 * `sd_hash` binds it to the open one as presented. Every refusal throws an AppError naming the
 * field and what is wrong: `malformed_mandate_credential` (400) for what cannot be read,
 * `invalid_mandate_credential` (422) for what fails verification.
 *
 * Rules:
 * - Only ES256 is accepted, for the issuer and for the agent (AP2's `sd-jwt_alg_values`): `none`,
 *   HMAC and every other algorithm are refused by name before any key is looked at.
 * - The issuer key is found by the header's `x5c` (a chain ending at a trusted root) or its `kid`
 *   (in a trusted issuer's JWKS); the key's type must fit the algorithm.
 * - Every disclosure must be referenced, once, by what the issuer signed (RFC 9901 §7.1): an extra
 *   or repeated disclosure is over-disclosure and refused. `_sd_alg` is `sha-256`.
 * - `exp` (with 60 s of skew) and `iat` (not in the future) hold on the JWT and the mandate content.
 */

/** Clock skew allowed on `exp` and `iat`, in seconds. */
export const SKEW_S = 60;
/** How old a key-binding JWT (`iat`) may be when presented, in seconds. */
export const KB_MAX_AGE_S = 300;

export const OPEN_PAYMENT_VCT = 'mandate.payment.open.1';
export const CLOSED_PAYMENT_VCT = 'mandate.payment.1';
export const KNOWN_VCTS = [OPEN_PAYMENT_VCT, CLOSED_PAYMENT_VCT, 'mandate.checkout.open.1', 'mandate.checkout.1'];

/** One SD-JWT of a chain, read. `text` is the token as presented, ending with `~`. */
export interface Token {
  text: string;
  jwt: string;
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  disclosures: string[];
  sd: SDJwt;
}

export const invalid = (field: string, message: string): AppError =>
  new AppError('invalid_mandate_credential', { details: { errors: [{ field, message }] } });

export const malformed = (field: string, message: string): AppError =>
  new AppError('malformed_mandate_credential', { details: { errors: [{ field, message }] } });

/** base64url SHA-256 of ASCII text (digests, `sd_hash`, a credential's hash). */
export const sha256 = (text: string): string => createHash('sha256').update(text, 'ascii').digest('base64url');

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The tokens of a chain (each ending with `~`): `count` of them, or 400 naming the field. */
export function splitChain(text: string, field: string, count: 1 | 2): string[] {
  if (text.length > MAX_CREDENTIAL_CHARS)
    throw malformed(field, `${field} is longer than ${MAX_CREDENTIAL_CHARS} characters`);
  if (!/^[A-Za-z0-9_\-.~]+$/.test(text))
    throw malformed(field, `${field} holds characters outside base64url, "." and "~": it is not a compact SD-JWT`);
  const parts = text.split('~~');
  const tokens = parts.map((p, i) => (i < parts.length - 1 ? `${p}~` : p)).filter((p) => p !== '');
  if (tokens.length !== count) {
    throw malformed(
      field,
      count === 1
        ? `${field} must be one SD-JWT (the open mandate), not a chain of ${tokens.length}`
        : `${field} must be the open mandate and its closed mandate joined by "~~" (found ${tokens.length} token(s))`,
    );
  }
  return tokens;
}

/** Reads one SD-JWT (`jwt~disclosure~…~`); a trailing key-binding JWT is not part of AP2's hops. */
export async function readToken(raw: string, field: string): Promise<Token> {
  const text = raw.includes('~') ? raw : `${raw}~`;
  if (!text.endsWith('~'))
    throw malformed(field, `${field} must end with "~": AP2 binds a closed mandate as a second SD-JWT after "~~"`);
  const parts = text.split('~');
  const jwt = parts[0]!;
  const disclosures = parts.slice(1, -1);
  if (disclosures.some((d) => d === '')) throw malformed(field, `${field} has an empty disclosure`);
  let header: Record<string, unknown>;
  let payload: Record<string, unknown>;
  try {
    header = decodeProtectedHeader(jwt) as Record<string, unknown>;
    payload = decodeJwt(jwt) as Record<string, unknown>;
  } catch {
    throw malformed(field, `${field} does not start with a compact JWT (header.payload.signature)`);
  }
  let sd: SDJwt;
  try {
    sd = await SDJwt.fromEncode(text, digest);
  } catch (e) {
    throw malformed(field, `${field} is not a readable SD-JWT: ${e instanceof Error ? e.message : 'unreadable'}`);
  }
  return { text, jwt, header, payload, disclosures, sd };
}

/** ES256 only, named in the refusal (alg confusion: `none`, HMAC with a public key, EdDSA). */
export function requireEs256(token: Token, field: string): void {
  const alg = token.header.alg;
  if (alg === 'ES256') return;
  const why =
    alg === 'none'
      ? 'an unsigned JWT (alg none) proves nothing'
      : typeof alg === 'string' && alg.startsWith('HS')
        ? `${alg} is a shared-secret MAC, never verified with a public key`
        : `alg ${JSON.stringify(alg ?? null)} is not accepted`;
  throw invalid(field, `${field}: ${why}; AP2 mandates are signed ES256`);
}

/** The leaf key of an `x5c` chain that ends at one of `roots`, each certificate valid now; else null. */
function x5cKey(x5c: unknown, roots: readonly string[], nowMs: number, field: string): KeyObject | null {
  if (!Array.isArray(x5c) || x5c.length === 0 || x5c.length > 10 || !x5c.every((c) => typeof c === 'string'))
    throw malformed(field, `${field}: the x5c header must be a list of base64 certificates`);
  let certs: X509Certificate[];
  try {
    certs = (x5c as string[]).map((c) => new X509Certificate(Buffer.from(c, 'base64')));
  } catch {
    throw malformed(field, `${field}: an x5c certificate cannot be read`);
  }
  const skew = SKEW_S * 1000;
  const current = (c: X509Certificate) =>
    c.validFromDate.getTime() - skew <= nowMs && nowMs <= c.validToDate.getTime() + skew;
  for (let i = 0; i < certs.length; i += 1) {
    if (!current(certs[i]!)) throw invalid(field, `${field}: x5c certificate ${i} is outside its validity dates`);
    const up = certs[i + 1];
    if (up && !(certs[i]!.checkIssued(up) && certs[i]!.verify(up.publicKey)))
      throw invalid(field, `${field}: x5c certificate ${i} is not signed by the next one`);
  }
  const last = certs[certs.length - 1]!;
  for (const pem of roots) {
    const root = new X509Certificate(pem);
    if (last.fingerprint256 === root.fingerprint256 || (last.checkIssued(root) && last.verify(root.publicKey)))
      return certs[0]!.publicKey;
  }
  return null;
}

/**
 * Verifies the issuer's signature against the trusted issuers: by `x5c` (chain to a trusted root)
 * or by `kid` (a trusted JWKS); then `iss` when the issuer names one. Returns the issuer matched.
 */
export async function verifyIssuer(
  token: Token,
  issuers: readonly TrustedIssuer[],
  nowMs: number,
  field: string,
): Promise<TrustedIssuer> {
  requireEs256(token, field);
  if (issuers.length === 0)
    throw invalid(field, 'the workspace trusts no AP2 issuer yet (PUT /api/w/{wid}/ap2/settings)');
  const { x5c, kid } = token.header;
  let matched: TrustedIssuer | null = null;
  let key: Parameters<typeof compactVerify>[1] | null = null;
  if (x5c !== undefined) {
    for (const issuer of issuers) {
      const found = issuer.x5cRoots ? x5cKey(x5c, issuer.x5cRoots, nowMs, field) : null;
      if (found) {
        [matched, key] = [issuer, found];
        break;
      }
    }
    if (!matched) throw invalid(field, `${field}: its x5c chain ends at no trusted root`);
  } else {
    if (typeof kid !== 'string') throw invalid(field, `${field}: its header names no kid and no x5c, so no issuer key`);
    matched = issuers.find((i) => i.jwks?.keys.some((k) => k.kid === kid)) ?? null;
    if (!matched) throw invalid(field, `${field}: kid ${JSON.stringify(kid)} is the key of no trusted issuer`);
    key = createLocalJWKSet(matched.jwks as unknown as { keys: Array<Record<string, string>> });
  }
  try {
    await compactVerify(token.jwt, key!, { algorithms: ['ES256'] });
  } catch {
    throw invalid(field, `${field}: the issuer's signature does not verify (forged or altered)`);
  }
  if (matched.iss !== undefined && token.payload.iss !== matched.iss)
    throw invalid(field, `${field}: iss ${JSON.stringify(token.payload.iss ?? null)} is not ${matched.iss}`);
  return matched;
}

/** Verifies a closed mandate's signature with the agent's key; `typ` must be `kb+sd-jwt`. */
export async function verifyHolder(token: Token, jwk: PublicJwk, field: string): Promise<void> {
  requireEs256(token, field);
  if (token.header.typ !== 'kb+sd-jwt')
    throw invalid(
      field,
      `${field}: the closed mandate's typ must be kb+sd-jwt (got ${JSON.stringify(token.header.typ ?? null)})`,
    );
  try {
    await compactVerify(token.jwt, await importJWK(jwk as unknown as Record<string, string>, 'ES256'), {
      algorithms: ['ES256'],
    });
  } catch {
    throw invalid(field, `${field}: the closed mandate is not signed by the agent's holder key`);
  }
}

/** Every digest the signed payload and the disclosures reference (`_sd` entries, `{"...": d}` items). */
function referenced(value: unknown, into: string[]): void {
  if (Array.isArray(value)) {
    for (const item of value) {
      if (isObject(item) && Object.keys(item).length === 1 && typeof item['...'] === 'string') into.push(item['...']);
      else referenced(item, into);
    }
  } else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (k === '_sd' && Array.isArray(v)) into.push(...v.filter((d): d is string => typeof d === 'string'));
      else referenced(v, into);
    }
  }
}

/** Each disclosure referenced once, none repeated: more than the credential signed is refused. */
export function checkDisclosures(token: Token, field: string): void {
  const alg = token.payload._sd_alg ?? 'sha-256';
  if (alg !== 'sha-256') throw invalid(field, `${field}: _sd_alg ${JSON.stringify(alg)} is not sha-256`);
  const refs: string[] = [];
  referenced(token.payload, refs);
  for (const d of token.disclosures) {
    try {
      const decoded: unknown = JSON.parse(Buffer.from(d, 'base64url').toString('utf8'));
      if (Array.isArray(decoded)) referenced(decoded[decoded.length - 1], refs);
    } catch {
      throw malformed(field, `${field}: a disclosure is not base64url JSON`);
    }
  }
  const known = new Set(refs);
  const seen = new Set<string>();
  token.disclosures.forEach((d, i) => {
    const h = sha256(d);
    if (seen.has(h)) throw invalid(field, `${field}: disclosure ${i + 1} is repeated`);
    seen.add(h);
    if (!known.has(h))
      throw invalid(field, `${field}: disclosure ${i + 1} is referenced by nothing the issuer signed (over-disclosed)`);
  });
}

/** `exp` not passed and `iat` not in the future (seconds since the epoch), with SKEW_S of skew. */
export function checkTimes(claims: Record<string, unknown>, nowMs: number, field: string): void {
  const now = Math.floor(nowMs / 1000);
  const { exp, iat, nbf } = claims;
  for (const [name, v] of Object.entries({ exp, iat, nbf }))
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v)))
      throw invalid(field, `${field}: ${name} must be a number of seconds`);
  if (typeof exp === 'number' && now >= exp + SKEW_S)
    throw invalid(field, `${field}: expired at ${new Date(exp * 1000).toISOString()}`);
  if (typeof iat === 'number' && iat > now + SKEW_S) throw invalid(field, `${field}: iat is in the future`);
  if (typeof nbf === 'number' && nbf > now + SKEW_S)
    throw invalid(field, `${field}: not valid before ${new Date(nbf * 1000).toISOString()}`);
}

/** The disclosed claims of a token (disclosures resolved, undisclosed array items left out). */
export async function claimsOf(token: Token): Promise<Record<string, unknown>> {
  return token.sd.getClaims<Record<string, unknown>>(digest);
}

/**
 * The mandate content of a given `vct`: the claims themselves, or the one `delegate_payload` item
 * with it (AP2's delegation). Another AP2 `vct` is refused by name; none at all too.
 */
export function contentOf(claims: Record<string, unknown>, vct: string, field: string): Record<string, unknown> {
  const items = [claims, ...(Array.isArray(claims.delegate_payload) ? claims.delegate_payload : [])].filter(isObject);
  const found = items.filter((i) => i.vct === vct);
  if (found.length === 1) return found[0]!;
  if (found.length > 1)
    throw invalid(field, `${field}: it holds ${found.length} mandates of vct ${vct}; one is expected`);
  const other = items.map((i) => i.vct).find((v) => typeof v === 'string' && v.startsWith('mandate.'));
  throw invalid(
    field,
    other !== undefined
      ? `${field}: vct ${JSON.stringify(other)} is not ${vct}`
      : `${field}: no mandate of vct ${vct} is disclosed`,
  );
}

/** The `cnf.jwk` thumbprint (RFC 7638) a mandate content is bound to, or a refusal. */
export async function cnfThumbprint(content: Record<string, unknown>, field: string): Promise<string> {
  const cnf = content.cnf;
  if (!isObject(cnf) || !isObject(cnf.jwk))
    throw invalid(field, `${field}: the open mandate has no cnf.jwk (the agent key it is bound to)`);
  try {
    return await calculateJwkThumbprint(cnf.jwk as Record<string, string>, 'sha256');
  } catch {
    throw invalid(field, `${field}: cnf.jwk is not a public key`);
  }
}
