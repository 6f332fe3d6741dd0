import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import type { Guards } from '../http/guards.js';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { CreateTokenInput, ServiceTokensService } from './service.js';
import { createTokenSchema } from './schemas.js';

export { createTokenSchema } from './schemas.js';
import { page, pageOf, wid } from '../http/params.js';

/** Service tokens in the console (docs/gate.md#machine-administration): owners only; the value is shown once. */
export const serviceTokensRoutes: Plugin<{
  tokens: ServiceTokensService;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-service-tokens',
  register(server, { tokens, production, guards }) {
    // Owners only.
    const owner = {
      auth: { strategies: sessionStrategies(production) },
      app: { permission: 'service-tokens.manage' },
    } as const;
    const write = { onPreAuth: guards.consoleWrite };
    server.route([
      {
        method: 'GET',
        path: '/api/w/{wid}/service-tokens',
        options: { ...owner, validate: { params: Joi.object({ wid }), query: page } },
        handler: (request) => tokens.list(member(request).wid, pageOf(request.query)),
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/service-tokens',
        options: { ...owner, ext: write, validate: { params: Joi.object({ wid }), payload: createTokenSchema } },
        async handler(request, h) {
          const { wid: w, actor } = member(request);
          const created = await tokens.create(w, request.payload as CreateTokenInput, actor);
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
          ...owner,
          ext: write,
          validate: { params: Joi.object({ wid, id: Joi.string().max(64).required() }) },
        },
        async handler(request) {
          const { wid: w, actor } = member(request);
          await tokens.revoke(w, (request.params as { id: string }).id, actor);
          return {};
        },
      },
    ]);
  },
};
