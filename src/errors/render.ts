import { AppError } from './app-error.js';
import { docsUrl, entryOf } from './catalogue.js';

/** Members a detail may never overwrite. */
const RESERVED = new Set(['type', 'message', 'fix', 'docs', 'requestId']);

export interface RenderContext {
  baseUrl: string;
  requestId: string;
  production: boolean;
}

export interface ErrorBody {
  error: {
    type: string;
    message: string;
    fix?: string;
    docs: string;
    requestId: string;
    [detail: string]: unknown;
  };
}

/**
 * The HTTP JSON rendering of an error (docs/api.md#errors). Other surfaces (the vendor envelope,
 * OAuth, JSON-RPC, the CLI) wrap or translate this one.
 */
export function renderError(err: AppError, ctx: RenderContext): ErrorBody {
  // Only `internal` is a fault whose message and details could reveal the cause; other 5xx
  // (upstream_failure, overloaded) are written for the caller and keep theirs.
  const internal = err.type === 'internal';
  const message = internal && ctx.production ? entryOf('internal').message : err.message;
  const extra = Object.fromEntries(Object.entries(internal ? {} : err.details).filter(([k]) => !RESERVED.has(k)));
  return {
    error: {
      type: err.type,
      message,
      fix: err.fix,
      docs: docsUrl(ctx.baseUrl, err.type),
      requestId: ctx.requestId,
      ...extra,
    },
  };
}

/**
 * The Anthropic-shaped surface (POST /v1/messages): the same error object inside the vendor's
 * envelope, `{ "type": "error", "error": { type, message, fix, docs, requestId, ... } }`, so its
 * SDK reads it as an API error and svc's own fields are all there.
 */
export function anthropicEnvelope(body: ErrorBody): { type: 'error'; error: ErrorBody['error'] } {
  return { type: 'error', error: body.error };
}

/**
 * The OAuth surface (RFC 6749 section 5.2, RFC 7591 section 3.2.2): `{ error, error_description }`,
 * the type as the error code. Catalogue types that OAuth does not name are answered as
 * invalid_request (a 4xx) or server_error (a 5xx), with the message as the description.
 */
const OAUTH_CODES = new Set([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unsupported_grant_type',
  'invalid_scope',
  'invalid_target',
  'invalid_client_metadata',
  'invalid_redirect_uri',
  'rate_limited',
  // RFC 8628 3.5: the device authorization grant's answers at the token endpoint.
  'authorization_pending',
  'slow_down',
  'access_denied',
  'expired_token',
]);
export function oauthEnvelope(body: ErrorBody, status: number): { error: string; error_description: string } {
  const code = OAUTH_CODES.has(body.error.type)
    ? body.error.type === 'rate_limited'
      ? 'slow_down'
      : body.error.type
    : status >= 500
      ? 'server_error'
      : 'invalid_request';
  return { error: code, error_description: body.error.message };
}
