import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import type { Guards } from '../http/guards.js';
import { actorOf, caller, WORKSPACE_KEY } from '../http/auth/callers.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { PeopleService } from '../people/index.js';
import { mintKeySchema, type MintKeyInput } from './schemas.js';
import { toKeyView, type KeysService } from './service.js';
import { page, pageOf, wid } from '../http/params.js';

/** Workspace keys: minted by an admin key (machines) or in the console (owners, admins). */
export const keysRoutes: Plugin<{ keys: KeysService; people: PeopleService; production: boolean; guards: Guards }> = {
  name: 'svc-keys',
  register(server, { keys, people, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    server.route([
      {
        method: 'POST',
        path: '/v1/admin/keys',
        options: { auth: WORKSPACE_KEY, plugins: { svc: { keyScope: 'admin' } }, validate: { payload: mintKeySchema } },
        async handler(request, h) {
          const c = caller(request, 'workspace-key');
          return h.response(await keys.mint(c.workspaceId, request.payload as MintKeyInput, actorOf(c))).code(201);
        },
      },
      {
        // `svc keys list|revoke` through the server: an admin key may already mint keys of any
        // scope, so reading and revoking them widens nothing.
        method: 'GET',
        path: '/v1/admin/keys',
        options: { auth: WORKSPACE_KEY, plugins: { svc: { keyScope: 'admin' } }, validate: { query: page } },
        handler(request) {
          return keys.list(caller(request, 'workspace-key').workspaceId, pageOf(request.query));
        },
      },
      {
        method: 'DELETE',
        path: '/v1/admin/keys/{id}',
        options: {
          auth: WORKSPACE_KEY,
          plugins: { svc: { keyScope: 'admin' } },
          validate: { params: Joi.object({ id: Joi.string().max(64).required() }) },
        },
        async handler(request) {
          const c = caller(request, 'workspace-key');
          await keys.revoke(c.workspaceId, (request.params as { id: string }).id, actorOf(c));
          return {};
        },
      },
      {
        method: 'GET',
        path: '/v1/whoami',
        options: { auth: WORKSPACE_KEY, plugins: { svc: { keyScope: 'any' } } },
        handler: (request) => toKeyView(caller(request, 'workspace-key').key),
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/keys',
        options: { auth: session, validate: { params: Joi.object({ wid }), query: page } },
        async handler(request) {
          const { wid: w } = request.params as { wid: string };
          await people.authorize(w, caller(request, 'session').user, 'keys.manage');
          return keys.list(w, pageOf(request.query));
        },
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/keys',
        options: {
          auth: session,
          ext: { onPreAuth: guards.consoleWrite },
          validate: { params: Joi.object({ wid }), payload: mintKeySchema },
        },
        async handler(request, h) {
          const { wid: w } = request.params as { wid: string };
          const c = caller(request, 'session');
          await people.authorize(w, c.user, 'keys.manage');
          return h.response(await keys.mint(w, request.payload as MintKeyInput, actorOf(c))).code(201);
        },
      },
      {
        method: 'DELETE',
        path: '/api/w/{wid}/keys/{id}',
        options: {
          auth: session,
          ext: { onPreAuth: guards.consoleWrite },
          validate: { params: Joi.object({ wid, id: Joi.string().max(64).required() }) },
        },
        async handler(request) {
          const { wid: w, id } = request.params as { wid: string; id: string };
          const c = caller(request, 'session');
          await people.authorize(w, c.user, 'keys.manage');
          await keys.revoke(w, id, actorOf(c));
          return {};
        },
      },
    ]);
  },
};
