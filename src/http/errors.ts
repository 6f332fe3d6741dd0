import type { Boom } from '@hapi/boom';
import type { Request, Server } from '@hapi/hapi';
import { AppError, invalidField, type FieldError } from '../errors/app-error.js';
import type { ErrorType } from '../errors/catalogue.js';
import { StoreError } from '../store/index.js';
import { expectedCredential } from './auth/callers.js';
import { unmatched } from './not-found.js';
import { svcOptions } from './route-options.js';

/**
 * The one translation point from anything a request can fail with to an AppError:
 * our own typed errors pass through; hapi's Boom errors (routing, payload, auth, timeouts) are
 * mapped to catalogue types; anything else is `internal`.
 */

interface JoiLikeError extends Error {
  details?: Array<{ path: Array<string | number>; message: string }>;
}

/** At most this many fields are listed in `errors`; the rest are counted. */
const MAX_FIELD_ERRORS = 50;

/**
 * hapi validate.failAction: joi details to the error's `errors` list (dotted field, messages joined).
 * Fields of the body are named as they are; others by their source (query.limit, params.wid).
 */
export function validationFailAction(request: Request, _h: unknown, err: Error | undefined): never {
  const failed = err as (JoiLikeError & { output?: { payload?: { validation?: { source?: string } } } }) | undefined;
  const source = failed?.output?.payload?.validation?.source ?? 'payload';
  const details = failed?.details ?? [];
  const shown = details.slice(0, MAX_FIELD_ERRORS);
  const errors: FieldError[] =
    shown.length > 0
      ? shown.map((d) => ({
          field: d.path.length === 0 ? null : [...(source === 'payload' ? [] : [source]), ...d.path].join('.'),
          message: d.message,
        }))
      : [{ field: null, message: err?.message ?? 'invalid request' }];
  if (details.length > MAX_FIELD_ERRORS)
    errors.push({ field: null, message: `and ${details.length - MAX_FIELD_ERRORS} more fields at fault` });
  const options = svcOptions(request.route.settings);
  const firstField = errors[0]?.field?.split('.')[0];
  // Own fields only: a body's field named "constructor" must not find Object's.
  const byField = options.validationTypeByField ?? {};
  const type: ErrorType =
    (firstField !== undefined && Object.hasOwn(byField, firstField) ? byField[firstField] : undefined) ||
    options.validationType ||
    'invalid_request';
  throw new AppError(type, { details: { errors } });
}

/** hapi payload.failAction: the body could not be read or parsed. */
export function payloadFailAction(request: Request, _h: unknown, err: Error | undefined): never {
  const boom = err as Boom | undefined;
  const status = boom?.output?.statusCode;
  // Close rather than read and discard the rest of an oversized body (body-limits.ts).
  if (status === 413) {
    const limit = request.route.settings.payload?.maxBytes;
    throw new AppError('body_too_large', {
      headers: { connection: 'close' },
      ...(limit === undefined ? {} : { message: `The request body is over this route's limit of ${limit} bytes.` }),
    });
  }
  if (status === 415) {
    throw invalidField(null, 'content-type must be application/json');
  }
  // Valid JSON with a __proto__ key: hapi refuses it (prototype pollution); say so, by field.
  if (/prototype/i.test(String((boom?.data as Error | undefined)?.message ?? ''))) {
    throw invalidField('__proto__', 'the key "__proto__" is not allowed anywhere in the body');
  }
  throw new AppError('invalid_json', {
    message: `The request body is not valid JSON${boom?.message && !/format/.test(boom.message) ? `: ${boom.message}` : '.'}`,
  });
}

/**
 * Store faults the client may retry, and what to say for each beyond the catalogue's default
 * (which speaks of a full store: `null` keeps it).
 */
const STORE_UNAVAILABLE: Readonly<Record<string, string | null>> = {
  no_space: null,
  disk_error: "The server's disk refused to record this request (an input/output error); nothing of it was kept.",
  unavailable:
    'The server cannot reach its store right now (the database is down or restarting); nothing of this request was kept.',
  damaged:
    'The server cannot read its store: the store file is damaged (the operator must restore it from a backup); nothing of this request was kept.',
  conflict:
    'The server could not record this request: too many concurrent writes to the same records; nothing of it was kept.',
};

export function toAppError(
  server: Server,
  request: Request,
  response: Boom | Error,
  options: { retryAfterSeconds: number },
): AppError {
  if (response instanceof AppError) return response;
  // Fails closed: nothing of the request was written, and the client may retry: the store cannot
  // grow, cannot be reached (PostgreSQL down or restarting), or the write kept conflicting with
  // concurrent writers past its retry bound.
  if (response instanceof StoreError && STORE_UNAVAILABLE[response.code] !== undefined)
    return new AppError('store_unavailable', {
      ...(STORE_UNAVAILABLE[response.code] ? { message: STORE_UNAVAILABLE[response.code]! } : {}),
      headers: { 'retry-after': String(options.retryAfterSeconds) },
    });
  const boom = response as Boom;
  const status = boom.isBoom ? boom.output.statusCode : 500;
  // hapi's router answers a path whose parameters it cannot decode with its own routes (404, or
  // a bare 400 when the method matched): the escape is the fault, whatever the method.
  if (isUnmatched(request) && !decodable(request.path)) return malformedPath(request.path);
  if (status === 404 && isUnmatched(request)) return unmatched(server, request);
  switch (status) {
    case 400:
      return invalidField(null, boom.message);
    case 401:
      return unauthenticated(request, boom);
    case 403:
      return new AppError('forbidden');
    case 404:
      return new AppError('not_found');
    case 413:
      return new AppError('body_too_large');
    case 415:
      return invalidField(null, 'unsupported content-type');
    // hapi's load shedding (server `load` limits), checked at dispatch.
    case 503:
      return new AppError('overloaded', { headers: { 'retry-after': String(options.retryAfterSeconds) } });
    default:
      return new AppError('internal', { cause: response });
  }
}

function decodable(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/** `400 invalid_request` for a path with a percent-escape that is not one (`%ZZ`, a stray `%`, bytes that are not UTF-8). */
function malformedPath(path: string): AppError {
  const escape = /%(?![0-9A-Fa-f]{2})[^/]{0,2}/.exec(path)?.[0];
  return new AppError('invalid_request', {
    details: {
      errors: [
        {
          field: 'path',
          message: `the path holds a percent-escape that does not decode${escape ? ` (${escape})` : ' to UTF-8 text'}; write a literal % as %25`,
        },
      ],
    },
  });
}

function isUnmatched(request: Request): boolean {
  return (request.route.method as string) === '_special' || request.route.settings.isInternal === true;
}

function unauthenticated(request: Request, boom: Boom): AppError {
  const strategy = request.route.settings.auth && request.route.settings.auth.strategies?.[0];
  const expected = strategy ? expectedCredential[strategy] : undefined;
  // A session cookie was sent but names no live session (signed out, expired, sealed with another
  // key): say so, rather than "none was sent".
  const cookie = String(request.headers.cookie ?? '');
  const stale =
    /invalid|expired|bad/i.test(boom.message ?? '') ||
    (strategy?.startsWith('session') === true && /(^|;\s*)(__Host-)?sid=/.test(cookie));
  const message = stale
    ? 'The session has ended or is not valid; sign in again.'
    : `This route takes ${expected ?? 'a credential'}; none was sent.`;
  return new AppError('unauthenticated', { message });
}
