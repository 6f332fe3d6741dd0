import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { Guards } from '../http/guards.js';
import { wid } from '../http/params.js';
import { EVENT_TYPES, type Webhooks } from './service.js';

/**
 * Outbound webhook endpoints in the console (docs/integrations.md#outbound-webhooks), owners and admins:
 * `GET/POST /api/w/{wid}/webhooks` (`{ url, events }`; the answer carries the secret, once),
 * `DELETE …/{id}`, `GET …/{id}/deliveries` (each with its tries), and
 * `POST …/{id}/deliveries/{did}/redeliver`.
 */
const ID = Joi.string().max(64).required();

export const webhooksRoutes: Plugin<{
  webhooks: Webhooks;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-webhooks',
  register(server, { webhooks, production, guards }) {
    const session = {
      auth: { strategies: sessionStrategies(production) },
      app: { permission: 'integrations.manage' },
    } as const;
    const write = { onPreAuth: guards.consoleWrite };
    server.route([
      {
        method: 'GET',
        path: '/api/w/{wid}/webhooks',
        options: { ...session, validate: { params: Joi.object({ wid }) } },
        handler: async (request) => ({ data: await webhooks.list(member(request).wid), next: null }),
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/webhooks',
        options: {
          ...session,
          ext: write,
          validate: {
            params: Joi.object({ wid }),
            payload: Joi.object({
              url: Joi.string()
                .uri({ scheme: ['http', 'https'] })
                .max(2048)
                .required(),
              events: Joi.array()
                .items(Joi.string().valid(...EVENT_TYPES))
                .min(1)
                .max(EVENT_TYPES.length)
                .required(),
            }),
          },
        },
        async handler(request, h) {
          const { wid: w, actor } = member(request);
          return h
            .response(await webhooks.add(w, request.payload as { url: string; events: string[] }, actor))
            .code(201);
        },
      },
      {
        method: 'DELETE',
        path: '/api/w/{wid}/webhooks/{id}',
        options: { ...session, ext: write, validate: { params: Joi.object({ wid, id: ID }) } },
        async handler(request) {
          const { wid: w, actor } = member(request);
          await webhooks.remove(w, (request.params as { id: string }).id, actor);
          return {};
        },
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/webhooks/{id}/deliveries',
        options: { ...session, validate: { params: Joi.object({ wid, id: ID }) } },
        async handler(request) {
          const { wid: w } = member(request);
          return { data: await webhooks.deliveries(w, (request.params as { id: string }).id), next: null };
        },
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/webhooks/{id}/deliveries/{did}/redeliver',
        options: { ...session, ext: write, validate: { params: Joi.object({ wid, id: ID, did: ID }) } },
        handler(request) {
          const { wid: w, actor } = member(request);
          const { id, did } = request.params as { id: string; did: string };
          return webhooks.redeliver(w, id, did, actor);
        },
      },
    ]);
  },
};
