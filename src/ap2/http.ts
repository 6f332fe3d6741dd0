import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import type { AgentsService } from '../agents/index.js';
import type { Guards } from '../http/guards.js';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import { wid } from '../http/params.js';
import type { PublicJwk, TrustedIssuer } from './records.js';
import { ap2SettingsSchema, holderKeySchema, importSchema } from './schemas.js';
import type { Ap2 } from './service.js';

const aid = Joi.string().max(64).required();

/**
 * AP2 in (docs/ap2.md): the workspace's trusted issuers and mandate imports (owners), an agent's
 * holder key and imported mandates (whoever manages the agent).
 */
export const ap2Routes: Plugin<{ ap2: Ap2; agents: AgentsService; production: boolean; guards: Guards }> = {
  name: 'svc-ap2',
  register(server, { ap2, agents, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const write = { onPreAuth: guards.consoleWrite };
    const params = (request: Request) => request.params as { wid: string; aid: string };
    const who = async (request: Request) => {
      const { wid: w, actor: name, user, role } = member(request);
      const actor = { actor: name, userId: user.id, role };
      const a = (request.params as { aid?: string }).aid;
      if (a !== undefined) await agents.manageable(w, a, actor);
      return actor;
    };
    const owners = { auth: session, app: { permission: 'ap2.manage' } } as const;
    const agentsManage = { auth: session, app: { permission: 'agents.manage' } } as const;
    const agentParams = { params: Joi.object({ wid, aid }) };

    server.route([
      {
        method: 'GET',
        path: '/api/w/{wid}/ap2/settings',
        options: { ...owners, validate: { params: Joi.object({ wid }) } },
        handler: (request) => ap2.settings(member(request).wid),
      },
      {
        method: 'PUT',
        path: '/api/w/{wid}/ap2/settings',
        options: {
          ...owners,
          ext: write,
          plugins: { svc: { validationType: 'invalid_trust_settings' } },
          validate: { params: Joi.object({ wid }), payload: ap2SettingsSchema },
        },
        async handler(request) {
          const body = request.payload as { issuers: TrustedIssuer[] };
          return ap2.setSettings(member(request).wid, body, await who(request));
        },
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/agents/{aid}/ap2/holder-key',
        options: { ...agentsManage, validate: agentParams },
        async handler(request) {
          await who(request);
          return ap2.holderKey(params(request).wid, params(request).aid);
        },
      },
      {
        method: 'PUT',
        path: '/api/w/{wid}/agents/{aid}/ap2/holder-key',
        options: {
          ...agentsManage,
          ext: write,
          plugins: { svc: { validationType: 'invalid_trust_settings' } },
          validate: { ...agentParams, payload: holderKeySchema },
        },
        async handler(request) {
          const actor = await who(request);
          const { wid: w, aid: a } = params(request);
          return ap2.setHolderKey(w, a, (request.payload as { jwk: PublicJwk }).jwk, actor);
        },
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/agents/{aid}/mandate/ap2',
        options: { ...agentsManage, validate: agentParams },
        async handler(request) {
          await who(request);
          return { object: 'list', data: await ap2.mandates(params(request).wid, params(request).aid) };
        },
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/agents/{aid}/mandate/ap2',
        options: {
          ...owners,
          ext: write,
          plugins: { svc: { validationType: 'malformed_mandate_credential' } },
          validate: { ...agentParams, payload: importSchema },
        },
        async handler(request, h) {
          const actor = await who(request);
          const { wid: w, aid: a } = params(request);
          const body = request.payload as { credential: string };
          return h.response(await ap2.importMandate(w, a, body.credential, actor)).code(201);
        },
      },
    ]);
  },
};
