import { createHash } from 'node:crypto';
import Joi from 'joi';
import type { Request, ResponseToolkit, RouteOptions } from '@hapi/hapi';
import { AppError, invalidField } from '../errors/app-error.js';
import { inboundStrategy, signatureRefused, type InboundVerifier } from './auth/signature.js';
import { validationFailAction } from './errors.js';
import { parseSignatureHeader, signatureMatches, timestampFresh, type ParsedSignature } from '../lib/svc-signature.js';
import type { TableValue } from '../store/index.js';
import { jsonFault, stripPrototypeKeys } from '../lib/well-formed.js';

// The record shapes this piece handles, as the store's registry declares them (the domains own
// them in their records.ts, a layer above this one).
type IntegrationKind = TableValue<'integrations'>['kind'];

/**
 * What every inbound route (docs/integrations.md) shares:
 * - `hookOptions(kind)`: the route's verifier strategy, the body kept as raw bytes (1 MB), and a
 *   count of its refusals per workspace (in the store, so every instance adds to one count; shown
 *   by `GET /api/w/{wid}/integrations`).
 *   A refused body is never logged: the request log has no bodies, and nothing here keeps one.
 * - `parseVerified`: JSON parsed only after the signature over those bytes verified, then
 *   checked as a whole (`verifiedJson`: no nesting past 64 levels, no lone surrogate, no number
 *   past what JSON carries, each refused by field: a signed body is still the sender's text, and
 *   the gate and the ledger hash only well-formed text) and validated with the route's schema
 *   (400 in the error shape of docs/api.md#errors). Nothing is stored before either check, so a redelivery of a
 *   refused body is refused the same way.
 * - `svcSignatureVerifier`: the generic `svc-signature` scheme with a workspace's secrets, used
 *   by the card issuer and the chat relay.
 * What a workspace has set up and its secrets are given (`InboundSecrets`, the integrations
 * registry in the server's assembly): src/http/ knows no domain.
 */
export const WID = /^ws_[0-9A-Za-z]{22}$/;
export const HOOK_BODY_LIMIT = 1_048_576;

/** What the inbound routes ask of whoever keeps the workspaces' integrations (the integrations registry). */
export interface InboundSecrets {
  /** The kind's non-secret settings in a workspace, or undefined when it is not set up there. */
  configOf(wid: string, kind: IntegrationKind): Promise<object | undefined>;
  /** The secrets a request of the kind may be signed with: the current one and, during a rotation, the one before. */
  secretsFor(wid: string, kind: IntegrationKind): Promise<string[]>;
  /** Refused requests of the kind counted for a workspace (kept in the store: one count across instances). */
  refusals(wid: string, kind: IntegrationKind): Promise<number>;
  /** Counts one refused request of the kind for a workspace. */
  countRefusal(wid: string, kind: IntegrationKind): Promise<void>;
}

/**
 * Refusals counted per workspace and kind, in the store (every instance adds to the same count).
 * Only a workspace that has set the kind up gets a count: a request to a made-up workspace id, or
 * to an address that names none, is not counted (nothing shows such a count), so it cannot grow
 * the store. A count that cannot be written is lost, never turned into an error for the sender.
 */
export interface Refusals {
  /** The refusals counted for a workspace's integration of this kind (reads the integration's record). */
  get(wid: string, kind: IntegrationKind): Promise<number>;
  /**
   * A route extension (onPreResponse) counting this route's 4xx and 5xx under the request's
   * workspace, when it has set the kind up (reads its settings, writes its count).
   */
  counter(kind: IntegrationKind): (request: Request, h: ResponseToolkit) => Promise<symbol>;
}

export function createRefusals(
  registry: Pick<InboundSecrets, 'configOf' | 'refusals' | 'countRefusal'>,
  log?: { warn(obj: object, msg: string): void },
): Refusals {
  return {
    get: (wid: string, kind: IntegrationKind): Promise<number> => registry.refusals(wid, kind),
    counter(kind: IntegrationKind) {
      return async (request: Request, h: ResponseToolkit) => {
        const response = request.response as { statusCode?: number; output?: { statusCode: number } } | null;
        const status = response?.output?.statusCode ?? response?.statusCode ?? 0;
        if (status >= 400) {
          const w = String(
            request.params.wid ??
              (request.plugins as { svcInbound?: { workspaceId?: string } }).svcInbound?.workspaceId ??
              '_',
          );
          try {
            if (WID.test(w) && (await registry.configOf(w, kind)) !== undefined) await registry.countRefusal(w, kind);
          } catch (err) {
            log?.warn({ err, kind }, 'inbound refusal not counted');
          }
        }
        return h.continue;
      };
    },
  };
}

/**
 * Route options of an inbound route of `kind`; `maxBytes` only for provider bodies that may be
 * larger; `variant` for a route verified by a second strategy of the kind (its verifier's `variant`).
 */
export function hookOptions(
  kind: IntegrationKind,
  refusals: Refusals,
  extra: Partial<RouteOptions> = {},
  maxBytes = HOOK_BODY_LIMIT,
  variant?: string,
): RouteOptions {
  return {
    auth: { strategy: inboundStrategy(kind, variant), payload: 'required' },
    ext: { onPreResponse: { method: refusals.counter(kind) } },
    payload: { parse: false, output: 'data', maxBytes },
    ...extra,
  };
}

/**
 * A verified JSON value (a parsed body, a token's claims) that the gate and the ledger can take:
 * refused by field (400 invalid_request) when `jsonFault` finds one.
 */
export function verifiedJson<T>(value: T): T {
  const fault = jsonFault(value);
  if (fault) throw invalidField(fault.field, fault.message);
  return value;
}

/** The verified raw body as JSON, validated by `schema` (its value, with defaults applied). */
export function parseVerified<T>(request: Request, h: ResponseToolkit, schema: Joi.Schema): T {
  let body: unknown;
  try {
    body = JSON.parse((request.payload as Buffer).toString('utf8'));
  } catch {
    throw new AppError('invalid_json');
  }
  // As the pipeline does for every body hapi parses (this one it does not).
  stripPrototypeKeys(body);
  verifiedJson(body);
  const { error, value } = schema.validate(body, { abortEarly: false });
  if (error) validationFailAction(request, h, error);
  return value as T;
}

/** The workspace named by the route's address, or none for a malformed one (then no secret applies). */
export function routeWorkspace(request: Request): string | undefined {
  const w = String(request.params.wid ?? '');
  return WID.test(w) ? w : undefined;
}

/**
 * The generic `svc-signature` scheme (docs/integrations.md) for `kind`, with the secrets of the workspace in
 * the address: `t=<unix>,v1=<hex>`, five minutes of tolerance, HMAC-SHA256 over `<t>.<raw body>`.
 * With `once`, the signed request (its timestamp and body) is then claimed: a replayed call is
 * refused, however its header lists the v1 values.
 */
export function svcSignatureVerifier(
  kind: IntegrationKind,
  registry: Pick<InboundSecrets, 'secretsFor'>,
  once?: (wid: string, signature: string) => Promise<boolean>,
): InboundVerifier<ParsedSignature> {
  return {
    kind,
    headers(request, nowMs) {
      const header = request.headers['svc-signature'];
      if (typeof header !== 'string')
        throw signatureRefused('This route takes a signed request (svc-signature header); none was sent.');
      const parsed = parseSignatureHeader(header);
      if (!parsed) throw signatureRefused('The svc-signature header is malformed; expected t=<unix seconds>,v1=<hex>.');
      if (!timestampFresh(parsed.t, nowMs))
        throw signatureRefused(
          'The signature timestamp is more than five minutes from now.',
          "Sign each request at the moment it is sent, with the sender's clock in sync.",
        );
      return parsed;
    },
    async body(request, raw, parsed) {
      const w = routeWorkspace(request);
      if (!w || !signatureMatches(parsed, raw, await registry.secretsFor(w, kind)))
        throw signatureRefused('The signature does not match the body.');
      // Claimed by what was signed (timestamp and body), not by the header's text: the same signed
      // request with another v1 added or the v1s reordered is the same request.
      if (once && !(await once(w, `${parsed.t}:${createHash('sha256').update(raw).digest('hex')}`)))
        throw signatureRefused(
          'This signed request was already received; each is accepted once.',
          'Sign every request afresh.',
        );
      return { workspaceId: w };
    },
  };
}
