import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import type { Guards } from '../http/guards.js';
import { actorOf, caller } from '../http/auth/callers.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { PeopleService } from '../people/index.js';
import type { CreateTokenInput, ServiceTokensService } from './service.js';
import { createTokenSchema } from './schemas.js';

export { createTokenSchema } from './schemas.js';
import { page, pageOf, wid } from '../http/params.js';

/** Service tokens in the console (docs/gate.md#machine-administration): owners only; the value is shown once. */
export const serviceTokensRoutes: Plugin<{
  tokens: ServiceTokensService;
  people: PeopleService;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-service-tokens',
  register(server, { tokens, people, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const owner = async (request: Request, w: string) => {
      const c = caller(request, 'session');
      await people.authorize(w, c.user, 'service-tokens.manage');
      return actorOf(c);
    };
    server.route([
      {
        method: 'GET',
        path: '/api/w/{wid}/service-tokens',
        options: { auth: session, validate: { params: Joi.object({ wid }), query: page } },
        async handler(request) {
          const { wid: w } = request.params as { wid: string };
          await owner(request, w);
          return tokens.list(w, pageOf(request.query));
        },
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/service-tokens',
        options: {
          auth: session,
          ext: { onPreAuth: guards.consoleWrite },
          validate: { params: Joi.object({ wid }), payload: createTokenSchema },
        },
        async handler(request, h) {
          const { wid: w } = request.params as { wid: string };
          const created = await tokens.create(w, request.payload as CreateTokenInput, await owner(request, w));
          return h
            .response({
              id: created.id,
              token: created.token,
              name: created.name,
              scopes: created.scopes,
              expiresAt: created.expiresAt,
              ipAllow: created.ipAllow,
            })
            .code(201);
        },
      },
      {
        method: 'DELETE',
        path: '/api/w/{wid}/service-tokens/{id}',
        options: {
          auth: session,
          ext: { onPreAuth: guards.consoleWrite },
          validate: { params: Joi.object({ wid, id: Joi.string().max(64).required() }) },
        },
        async handler(request) {
          const { wid: w, id } = request.params as { wid: string; id: string };
          await tokens.revoke(w, id, await owner(request, w));
          return {};
        },
      },
    ]);
  },
};
