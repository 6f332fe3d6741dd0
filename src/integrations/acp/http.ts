import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { verified } from '../../http/auth/signature.js';
import { wid } from '../../http/params.js';
import { hookOptions, parseVerified, type Refusals } from '../../http/inbound.js';
import { acpEventSchema, type AcpEvent } from './schemas.js';
import type { AcpOrders } from './service.js';
import type { AcpDelivery } from './verifier.js';

/**
 * A merchant's checkout events (the Agentic Commerce Protocol's webhooks, docs/integrations.md):
 * `POST /v1/hooks/acp/{wid}`, verified by the `acp` strategy (verifier.ts: Merchant-Signature)
 * before anything parses the body, then validated (400 by field), claimed once and recorded
 * (service.ts); answered `200 { received: true, checkout_session_id, actions }`, with the
 * `Request-Id` header echoed as `request_id` when sent. Its secret is made by
 * `PUT /api/w/{wid}/integrations/acp` (../http.ts).
 */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

export const acpRoutes: Plugin<{ acp: AcpOrders; refusals: Refusals }> = {
  name: 'svc-acp',
  register(server, { acp, refusals }) {
    server.route({
      method: 'POST',
      path: '/v1/hooks/acp/{wid}',
      options: hookOptions('acp', refusals, { validate: { params: Joi.object({ wid }) } }),
      async handler(request, h) {
        const event = parseVerified<AcpEvent>(request, h, acpEventSchema);
        const answer = await acp.handle(verified<AcpDelivery>(request), event);
        const id = request.headers['request-id'];
        return h
          .response({ ...answer, ...(typeof id === 'string' && REQUEST_ID.test(id) ? { request_id: id } : {}) })
          .code(200);
      },
    });
  },
};
