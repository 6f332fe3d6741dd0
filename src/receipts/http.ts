import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import type { Guards } from '../http/guards.js';
import type { Receipts } from './service.js';
import type { SigningKeys } from './signing-keys.js';

/**
 * Public receipt routes (SPEC.md 4.7, API.md 3): no credential; rate limited per client address.
 * - GET /.well-known/jwks.json: every receipt key still in use (`use: sig`) and the ledger key
 *   (`use: ledger`), public halves only.
 * - POST /v1/verify `{ receipt }`: `{ valid, claims, reason, replayed }`; a receipt that is
 *   not valid is a 200 with `valid: false` and the reason, not an error.
 */
export const receiptsRoutes: Plugin<{ receipts: Receipts; signingKeys: SigningKeys; guards: Guards }> = {
  name: 'svc-receipts',
  register(server, { receipts, signingKeys, guards }) {
    server.route([
      {
        method: 'GET', path: '/.well-known/jwks.json',
        options: { auth: false, ext: { onPreAuth: guards.publicRoute('public') } },
        handler: (_request, h) => h.response(signingKeys.jwks()).header('cache-control', 'public, max-age=300'),
      },
      {
        method: 'POST', path: '/v1/verify',
        options: {
          auth: false,
          ext: { onPreAuth: guards.publicRoute('public') },
          validate: { payload: Joi.object({ receipt: Joi.string().min(1).max(16_384).required() }) },
        },
        handler: (request) => receipts.verifyOnline((request.payload as { receipt: string }).receipt),
      },
    ]);
  },
};
