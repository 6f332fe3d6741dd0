import type { JSONWebKeySet, JWTVerifyGetKey } from 'jose';
import { request, type Dispatcher } from 'undici';
import type { Clock } from '../../lib/clock.js';
import { refusedBy, safeDispatcher, targetProblem } from '../../lib/safe-target.js';

/**
 * The identity provider's public keys, per workspace (settings `jwks` inline, or `jwksUri`).
 * Rules:
 * - Inline keys are used as given (jose's local key set).
 * - A `jwksUri` is fetched with undici (no redirects, one 5 s deadline for connect, headers and
 *   body, at most 256 KB, JSON with a `keys` array) and cached per workspace and address for an
 *   hour. A token whose `kid` no cached key has makes one refetch, at most once a minute per
 *   workspace and address: an identity provider that rolled its keys is followed at once, and a
 *   flood of made-up `kid`s costs one fetch a minute. The limit holds after a failed fetch too
 *   (an endpoint that is down costs one fetch a minute, not one per token), and concurrent
 *   tokens share the one fetch in flight.
 * - The address must be https (http only when private targets are allowed, as in tests), and is
 *   held to lib/safe-target.ts at connect time: never link-local, loopback or private only when
 *   the operator allows those (`webhooks.allowPrivateTargets`, the same rule as outbound
 *   webhooks); a name rebound to another address between a check and the connection is refused.
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

async function fetchJwks(uri: string, allowPrivate: boolean, dispatcher: Dispatcher): Promise<JSONWebKeySet> {
  const problem = await targetProblem(uri, { allowPrivateTargets: allowPrivate, httpsOnly: true });
  if (problem) throw new KeysUnavailable(`The identity provider's jwksUri is refused: ${problem}.`);
  // One deadline for the whole exchange (connect, headers and body), besides undici's own.
  const signal = AbortSignal.timeout(TIMEOUT_MS);
  const answer = await request(uri, {
    method: 'GET',
    dispatcher,
    signal,
    headers: { accept: 'application/json, application/jwk-set+json' },
    headersTimeout: TIMEOUT_MS,
    bodyTimeout: TIMEOUT_MS,
  }).catch((err: unknown) => {
    const refused = refusedBy(err);
    throw new KeysUnavailable(
      refused
        ? `The identity provider's jwksUri is ${refused.message}.`
        : "The identity provider's jwksUri could not be reached.",
    );
  });
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of answer.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_BYTES) throw new KeysUnavailable("The identity provider's key set is too large.");
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    answer.body.destroy();
    throw err instanceof KeysUnavailable
      ? err
      : new KeysUnavailable("The identity provider's key set could not be read in time.");
  }
  if (answer.statusCode !== 200)
    throw new KeysUnavailable(`The identity provider's jwksUri answered ${answer.statusCode}.`);
  let jwks: unknown;
  try {
    jwks = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new KeysUnavailable("The identity provider's key set is not JSON.");
  }
  if (!jwks || typeof jwks !== 'object' || !Array.isArray((jwks as JSONWebKeySet).keys))
    throw new KeysUnavailable("The identity provider's key set has no keys array.");
  return jwks as JSONWebKeySet;
}

/** The identity provider's keys (the rules above); holds its cache in memory, no store. */
export interface SsfKeys {
  /** The error a key resolver throws when the key set cannot be had (the verifier answers 401). */
  readonly KeysUnavailable: typeof KeysUnavailable;
  /** The key resolver jwtVerify uses for this workspace's settings (jose is imported with the first). */
  resolver(wid: string, settings: SsfKeySettings): Promise<JWTVerifyGetKey>;
}

export function createSsfKeys(deps: { clock: Clock; allowPrivateTargets: boolean; dispatcher?: Dispatcher }): SsfKeys {
  const { clock, allowPrivateTargets } = deps;
  const dispatcher = deps.dispatcher ?? safeDispatcher({ allowPrivateTargets, connectTimeoutMs: TIMEOUT_MS });
  const cache = new Map<string, { uri: string; keys: JWTVerifyGetKey; fetchedAt: number }>();
  /** [wid, uri] -> when it was last fetched (successfully or not). */
  const lastFetch = new Map<string, number>();
  /** [wid, uri] -> the fetch in flight: every token waiting for keys shares it. */
  const inFlight = new Map<string, Promise<JWTVerifyGetKey>>();
  const slot = (wid: string, uri: string) => `${wid} ${uri}`;

  const load = (wid: string, uri: string): Promise<JWTVerifyGetKey> => {
    const key = slot(wid, uri);
    const running = inFlight.get(key);
    if (running) return running;
    lastFetch.set(key, clock.now());
    const fetching = (async () => {
      const { createLocalJWKSet } = await import('jose');
      const keys = createLocalJWKSet(await fetchJwks(uri, allowPrivateTargets, dispatcher));
      cache.set(wid, { uri, keys, fetchedAt: clock.now() });
      return keys;
    })().finally(() => inFlight.delete(key));
    inFlight.set(key, fetching);
    return fetching;
  };

  return {
    KeysUnavailable,

    async resolver(wid: string, settings: SsfKeySettings): Promise<JWTVerifyGetKey> {
      const { createLocalJWKSet, errors } = await import('jose');
      if (settings.jwks) return createLocalJWKSet(settings.jwks);
      const uri = settings.jwksUri!;
      return async (header, token) => {
        const now = clock.now();
        const running = inFlight.get(slot(wid, uri));
        if (running) return (await running)(header, token);
        const cached = cache.get(wid);
        const usable = cached && cached.uri === uri ? cached : undefined;
        const fresh = usable && now - usable.fetchedAt < JWKS_TTL_MS ? usable : undefined;
        // Once a minute at most per workspace and address, whether the last fetch worked or not.
        const mayFetch = now - (lastFetch.get(slot(wid, uri)) ?? -Infinity) >= REFETCH_EVERY_MS;
        if (!fresh) {
          // An expired or missing set: fetched again; in between, the stale set serves.
          if (mayFetch) return (await load(wid, uri))(header, token);
          if (usable) return usable.keys(header, token);
          throw new KeysUnavailable(
            "The identity provider's key set could not be fetched; it is tried again at most once a minute.",
          );
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
