import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import { permittedMember, sessionStrategies } from '../http/auth/session.js';
import type { Guards } from '../http/guards.js';
import { wid } from '../http/params.js';
import type { PeopleService } from '../people/index.js';
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
  people: PeopleService;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-webhooks',
  register(server, { webhooks, people, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const write = { onPreAuth: guards.consoleWrite };
    const managed = (request: Request) => permittedMember(people, request, 'integrations.manage');
    server.route([
      {
        method: 'GET',
        path: '/api/w/{wid}/webhooks',
        options: { auth: session, validate: { params: Joi.object({ wid }) } },
        handler: async (request) => ({ data: await webhooks.list((await managed(request)).wid), next: null }),
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/webhooks',
        options: {
          auth: session,
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
          const { wid: w, actor } = await managed(request);
          return h
            .response(await webhooks.add(w, request.payload as { url: string; events: string[] }, actor))
            .code(201);
        },
      },
      {
        method: 'DELETE',
        path: '/api/w/{wid}/webhooks/{id}',
        options: { auth: session, ext: write, validate: { params: Joi.object({ wid, id: ID }) } },
        async handler(request) {
          const { wid: w, actor } = await managed(request);
          await webhooks.remove(w, (request.params as { id: string }).id, actor);
          return {};
        },
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/webhooks/{id}/deliveries',
        options: { auth: session, validate: { params: Joi.object({ wid, id: ID }) } },
        async handler(request) {
          const { wid: w } = await managed(request);
          return { data: await webhooks.deliveries(w, (request.params as { id: string }).id), next: null };
        },
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/webhooks/{id}/deliveries/{did}/redeliver',
        options: { auth: session, ext: write, validate: { params: Joi.object({ wid, id: ID, did: ID }) } },
        async handler(request) {
          const { wid: w, actor } = await managed(request);
          const { id, did } = request.params as { id: string; did: string };
          return webhooks.redeliver(w, id, did, actor);
        },
      },
    ]);
  },
};
