import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { request } from 'undici';
import type { Clock } from '../../lib/clock.js';

/**
 * The identity provider's public keys, per workspace (settings `jwks` inline, or `jwksUri`).
 * Rules:
 * - Inline keys are used as given (jose's local key set).
 * - A `jwksUri` is fetched with undici (no redirects, 5 s timeouts, at most 256 KB, JSON with a
 *   `keys` array) and cached per workspace and address for an hour. A token whose `kid` no cached
 *   key has makes one refetch, at most once a minute per workspace: an identity provider that
 *   rolled its keys is followed at once, and a flood of made-up `kid`s costs one fetch a minute.
 * - The address must not resolve to a link-local address (cloud metadata), nor to a loopback or
 *   private one unless the operator allows those (`webhooks.allowPrivateTargets`, the same rule as
 *   outbound webhooks).
 * - A key set that cannot be fetched refuses the token (401), never a server error.
 */
export const JWKS_TTL_MS = 3_600_000;
export const REFETCH_EVERY_MS = 60_000;
const MAX_BYTES = 262_144;
const TIMEOUT_MS = 5_000;

export interface SsfKeySettings {
  jwksUri?: string | null;
  jwks?: JSONWebKeySet | null;
}

class KeysUnavailable extends Error {}

async function targetProblem(raw: string, allowPrivate: boolean): Promise<string | null> {
  const url = new URL(raw);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'the address must be http or https';
  if (url.username || url.password) return 'the address may not carry credentials';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = ipaddr.isValid(host) ? [host] : (await lookup(host, { all: true }).catch(() => [])).map((a) => a.address);
  if (addresses.length === 0) return 'its host name does not resolve';
  for (const address of addresses) {
    const range = ipaddr.process(address).range();
    if (range === 'linkLocal') return 'it resolves to a link-local address';
    if (['loopback', 'private', 'uniqueLocal', 'unspecified', 'carrierGradeNat'].includes(range) && !allowPrivate) return `it resolves to a ${range} address`;
  }
  return null;
}

async function fetchJwks(uri: string, allowPrivate: boolean): Promise<JSONWebKeySet> {
  const problem = await targetProblem(uri, allowPrivate);
  if (problem) throw new KeysUnavailable(`The identity provider's jwksUri is refused: ${problem}.`);
  const answer = await request(uri, { method: 'GET', headers: { accept: 'application/json, application/jwk-set+json' }, headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS })
    .catch(() => { throw new KeysUnavailable('The identity provider\'s jwksUri could not be reached.'); });
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of answer.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_BYTES) throw new KeysUnavailable('The identity provider\'s key set is too large.');
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    answer.body.destroy();
    throw err instanceof KeysUnavailable ? err : new KeysUnavailable('The identity provider\'s key set could not be read.');
  }
  if (answer.statusCode !== 200) throw new KeysUnavailable(`The identity provider's jwksUri answered ${answer.statusCode}.`);
  let jwks: unknown;
  try {
    jwks = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new KeysUnavailable('The identity provider\'s key set is not JSON.');
  }
  if (!jwks || typeof jwks !== 'object' || !Array.isArray((jwks as JSONWebKeySet).keys)) throw new KeysUnavailable('The identity provider\'s key set has no keys array.');
  return jwks as JSONWebKeySet;
}

export function createSsfKeys(deps: { clock: Clock; allowPrivateTargets: boolean }) {
  const { clock, allowPrivateTargets } = deps;
  const cache = new Map<string, { uri: string; keys: JWTVerifyGetKey; fetchedAt: number }>();
  const lastFetch = new Map<string, number>();

  const load = async (wid: string, uri: string): Promise<JWTVerifyGetKey> => {
    lastFetch.set(wid, clock.now());
    const keys = createLocalJWKSet(await fetchJwks(uri, allowPrivateTargets));
    cache.set(wid, { uri, keys, fetchedAt: clock.now() });
    return keys;
  };

  return {
    KeysUnavailable,

    /** The key resolver jwtVerify uses for this workspace's settings. */
    resolver(wid: string, settings: SsfKeySettings): JWTVerifyGetKey {
      if (settings.jwks) return createLocalJWKSet(settings.jwks);
      const uri = settings.jwksUri!;
      return async (header, token) => {
        const now = clock.now();
        const cached = cache.get(wid);
        const fresh = cached && cached.uri === uri && now - cached.fetchedAt < JWKS_TTL_MS ? cached : undefined;
        const mayFetch = now - (lastFetch.get(wid) ?? -Infinity) >= REFETCH_EVERY_MS;
        if (!fresh) {
          // An expired or missing set: fetched again (once a minute at most; in between, the stale set serves).
          if (mayFetch || !cached || cached.uri !== uri) return (await load(wid, uri))(header, token);
          return cached.keys(header, token);
        }
        try {
          return await fresh.keys(header, token);
        } catch (err) {
          if (!(err instanceof errors.JWKSNoMatchingKey) || !mayFetch) throw err;
          return (await load(wid, uri))(header, token);
        }
      };
    },
  };
}

export type SsfKeys = ReturnType<typeof createSsfKeys>;
