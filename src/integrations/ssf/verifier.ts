import type { errors as JoseErrors, JSONWebKeySet, JWTPayload } from 'jose';
import { signatureRefused, type InboundVerifier } from '../../http/auth/signature.js';
import type { Clock } from '../../lib/clock.js';
import { routeWorkspace, verifiedJson } from '../../http/inbound.js';
import type { Once } from '../once.js';
import type { IntegrationRegistry } from '../registry.js';
import type { SsfKeys } from './keys.js';

/**
 * The identity provider's Security Event Tokens (docs/integrations.md, RFC 8417 over RFC 8935 push) on
 * `POST /v1/hooks/ssf/{wid}`.
 * Rules:
 * - Before the body is read: `content-type: application/secevent+jwt`.
 * - Over the raw bytes: a compact JWS (valid UTF-8), verified with jose against the workspace's
 *   keys (keys.ts), algorithms ES256 and RS256 only (so `none` and HS256 are refused), `iss` and
 *   `aud` as configured, `iat` present, at most five minutes old and not ahead of our clock by more
 *   than CLOCK_SKEW_S, `exp` (when present) not passed, a `jti` of 1 to 256 characters and an
 *   `events` object.
 * - The JWS header's `typ` must be `secevent+jwt` (or `application/secevent+jwt`). RFC 8417 2.3
 *   only RECOMMENDS explicit typing, but OpenID SSF 1.0 requires it of transmitters, and requiring
 *   it means no other JWT the identity provider signs (an ID token, a logout token) can be
 *   passed off as a security event. A token without `typ` is refused.
 * - A `jti` already used in the store (scope `ssf:<wid>`) is refused here; the claim itself is
 *   made by service.ts in the same write as the token's effects, until the token could no longer
 *   pass the freshness check: a replay is refused, even after a restart, and a token whose
 *   effects failed to be written is not claimed (its retry is acted on).
 * - Every refusal is 401 with a plain reason; nothing of the token is ever echoed or logged.
 *   Claims that verified but hold text the ledger cannot hash (a lone surrogate), nesting past 64
 *   levels or a number JSON cannot carry are `400 invalid_request` naming the claim.
 */
export const MAX_AGE_S = 300;
export const CLOCK_SKEW_S = 30;
const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export interface SsfSettings extends Record<string, unknown> {
  issuer: string;
  audience: string;
  jwksUri?: string | null;
  jwks?: JSONWebKeySet | null;
}

export interface VerifiedSet {
  workspaceId: string;
  claims: JWTPayload & { jti: string; iat: number; events: Record<string, unknown> };
  /** Until when (ms) the `jti` is claimed once the token is acted on. */
  claimUntil: number;
}

const FIX =
  'Send a Security Event Token signed (ES256 or RS256) with a key of the configured key set, with the configured iss and aud, a fresh iat and a new jti.';

/** A jose failure in plain words (its claim name at most: never a value from the token). */
function reasonOf(err: unknown, keysUnavailable: new (...args: never[]) => Error, errors: typeof JoseErrors): string {
  if (err instanceof keysUnavailable) return (err as Error).message;
  if (err instanceof errors.JOSEAlgNotAllowed) return "The token's algorithm is not allowed; only ES256 and RS256 are.";
  if (err instanceof errors.JWKSNoMatchingKey) return "No key of the identity provider's key set matches the token.";
  if (err instanceof errors.JWKSMultipleMatchingKeys) return 'The token names no key id and several keys could match.';
  if (err instanceof errors.JWSSignatureVerificationFailed) return "The token's signature does not verify.";
  if (err instanceof errors.JWTExpired)
    return err.claim === 'iat' ? 'The token is older than five minutes (iat).' : 'The token has expired (exp).';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.reason === 'missing') return `The token has no ${err.claim} claim.`;
    if (err.claim === 'iat') return "The token's iat is in the future.";
    if (err.claim === 'typ') return "The token's typ header is not secevent+jwt; it is not a Security Event Token.";
    return `The token's ${err.claim} claim is not the one configured or is malformed.`;
  }
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid || err instanceof errors.JOSENotSupported)
    return 'The body is not a well-formed signed token.';
  return 'The token could not be verified.';
}

export function ssfVerifier(deps: {
  registry: IntegrationRegistry;
  keys: SsfKeys;
  once: Once;
  clock: Clock;
}): InboundVerifier<null> {
  const { registry, keys, once, clock } = deps;
  return {
    kind: 'ssf',
    headers(request) {
      const type = String(request.headers['content-type'] ?? '')
        .split(';')[0]!
        .trim()
        .toLowerCase();
      if (type !== 'application/secevent+jwt')
        throw signatureRefused('This route takes a Security Event Token (content-type application/secevent+jwt).', FIX);
      return null;
    },
    async body(request, raw): Promise<VerifiedSet> {
      const w = routeWorkspace(request);
      const settings = w ? await registry.configOf<SsfSettings>(w, 'ssf') : undefined;
      if (!w || !settings || (!settings.jwks && !settings.jwksUri))
        throw signatureRefused(
          'This workspace has no identity provider set up.',
          'Set one up with PUT /api/w/{wid}/integrations/ssf first.',
        );
      let token: string;
      try {
        token = utf8.decode(raw).trim();
      } catch {
        throw signatureRefused('The body is not a well-formed signed token.', FIX);
      }
      if (!COMPACT.test(token)) throw signatureRefused('The body is not a well-formed signed token.', FIX);
      // jose with the first token, not when the server starts.
      const { errors, jwtVerify } = await import('jose');
      let claims: JWTPayload;
      try {
        ({ payload: claims } = await jwtVerify(token, await keys.resolver(w, settings), {
          algorithms: ['ES256', 'RS256'],
          issuer: settings.issuer,
          audience: settings.audience,
          typ: 'secevent+jwt',
          maxTokenAge: MAX_AGE_S,
          clockTolerance: CLOCK_SKEW_S,
          requiredClaims: ['iss', 'aud', 'iat', 'jti'],
          currentDate: new Date(clock.now()),
        }));
      } catch (err) {
        throw signatureRefused(reasonOf(err, keys.KeysUnavailable, errors), FIX);
      }
      // Verified, yet still the sender's text: a claim the ledger cannot hash is refused by field.
      verifiedJson(claims);
      const { jti, iat, events } = claims as { jti?: unknown; iat?: unknown; events?: unknown };
      if (typeof jti !== 'string' || jti.length < 1 || jti.length > 256)
        throw signatureRefused("The token's jti must be 1 to 256 characters.", FIX);
      if (!events || typeof events !== 'object' || Array.isArray(events))
        throw signatureRefused('The token carries no events object; it is not a Security Event Token.', FIX);
      const until = (iat as number) * 1000 + (MAX_AGE_S + 2 * CLOCK_SKEW_S) * 1000;
      if (await once.used(`ssf:${w}`, jti))
        throw signatureRefused(
          'This token (its jti) was already received; each is accepted once.',
          'Send every event in a new token with a new jti.',
        );
      return { workspaceId: w, claims: claims as VerifiedSet['claims'], claimUntil: until };
    },
  };
}
