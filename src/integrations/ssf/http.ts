import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { verified } from '../../http/auth/signature.js';
import { wid } from '../../http/params.js';
import { hookOptions, type Refusals } from '../../http/inbound.js';
import type { Ssf } from './service.js';
import type { VerifiedSet } from './verifier.js';

/**
 * The identity provider's push delivery (RFC 8935): `POST /v1/hooks/ssf/{wid}` with a Security
 * Event Token as the body (`content-type: application/secevent+jwt`), verified by the `ssf`
 * strategy before anything else reads it; answered `202` with no body once acted on.
 * Its settings are `PUT /api/w/{wid}/integrations/ssf` (integrations/http.ts).
 */
export const ssfRoutes: Plugin<{ ssf: Ssf; refusals: Refusals }> = {
  name: 'svc-ssf',
  register(server, { ssf, refusals }) {
    server.route({
      method: 'POST',
      path: '/v1/hooks/ssf/{wid}',
      options: hookOptions('ssf', refusals, { validate: { params: Joi.object({ wid }) } }),
      async handler(request, h) {
        await ssf.handle(verified<VerifiedSet>(request));
        return h.response().code(202);
      },
    });
  },
};
