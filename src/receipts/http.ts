import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { AppError, invalidField } from '../errors/app-error.js';
import type { Guards } from '../http/guards.js';
import type { Receipts } from './service.js';
import type { SigningKeys } from '../signing/service.js';

/**
 * Public receipt routes (docs/gate.md#receipts): no credential; rate limited per client address.
 * - GET /.well-known/jwks.json: every receipt key still in use (`use: sig`) and the ledger key
 *   (`use: ledger`), public halves only.
 * - POST /v1/verify `{ receipt }`: `{ valid, claims, reason, replayed }`; a receipt that is
 *   not valid is a 200 with `valid: false` and the reason, not an error.
 */
const verifySchema = Joi.object({ receipt: Joi.string().min(1).max(16_384).required() });

/** `{ receipt }` from the raw body: at most a few fields, then JSON, then the schema. */
function verifyBody(raw: Buffer): { receipt: string } {
  let colons = 0;
  for (let i = raw.indexOf(0x3a); i !== -1 && colons <= MAX_VERIFY_FIELDS; i = raw.indexOf(0x3a, i + 1)) colons += 1;
  if (colons > MAX_VERIFY_FIELDS)
    throw invalidField(null, `the body may hold only { "receipt": "..." }, not ${MAX_VERIFY_FIELDS}+ fields`);
  let parsed: unknown;
  try {
    // JSON.parse makes "__proto__" an own field, never a prototype; the schema refuses it.
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new AppError('invalid_json');
  }
  const { value, error } = verifySchema.validate(parsed, { abortEarly: false });
  if (error)
    throw new AppError('invalid_request', {
      details: {
        errors: error.details.map((d) => ({ field: d.path.length ? d.path.join('.') : null, message: d.message })),
      },
    });
  return value as { receipt: string };
}

/** A `{ receipt }` body has one field; a few more (whitespace, odd clients) are tolerated. */
const MAX_VERIFY_FIELDS = 16;

export const receiptsRoutes: Plugin<{ receipts: Receipts; signingKeys: SigningKeys; guards: Guards }> = {
  name: 'svc-receipts',
  register(server, { receipts, signingKeys, guards }) {
    server.route([
      {
        method: 'GET',
        path: '/.well-known/jwks.json',
        options: { auth: false, ext: { onPreAuth: guards.publicRoute('public') } },
        handler: async (_request, h) =>
          h.response(await signingKeys.jwks()).header('cache-control', 'public, max-age=300'),
      },
      {
        method: 'POST',
        path: '/v1/verify',
        options: {
          auth: false,
          ext: { onPreAuth: guards.publicRoute('public') },
          // Read raw and checked for shape before it is parsed: a public route must not let
          // anyone spend the server's time parsing and validating a body of 60,000 fields.
          payload: { parse: false, output: 'data', allow: 'application/json' },
        },
        handler: (request) => receipts.verifyOnline(verifyBody(request.payload as Buffer).receipt),
      },
    ]);
  },
};
