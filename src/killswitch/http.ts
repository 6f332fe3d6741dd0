import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import type { AgentsService } from '../agents/index.js';
import type { Guards } from '../http/guards.js';
import { machineCaller, SERVICE_TOKEN } from '../http/auth/callers.js';
import { member, type RoutePermission } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import { toFreezeAnswer, type KillSwitch, type Selector, type Who } from './service.js';
import { wid } from '../http/params.js';

const aid = Joi.string().max(64).required();
const reason = Joi.object({ reason: Joi.string().trim().min(1).max(500).required() });
const selectorSchema = Joi.object({
  agentIds: Joi.array()
    .items(Joi.string().pattern(/^agt_[0-9A-Za-z]{22}$/))
    .min(1)
    .max(1000)
    .unique(),
  tags: Joi.array().items(Joi.string().trim().min(1).max(64)).min(1).max(50).unique(),
  blueprint: Joi.string().max(64),
  actsFor: Joi.string().pattern(/^usr_[0-9A-Za-z]{22}$/),
  all: Joi.boolean().valid(true),
})
  .min(1)
  .required();
const bulkFreeze = Joi.object({
  selector: selectorSchema,
  reason: Joi.string().trim().min(1).max(500).required(),
  // Checked by the service against what the selector matches now, so that a missing or unusable
  // count is answered with that count (409 confirm_count_required { count }).
  confirmCount: Joi.any(),
});

/**
 * The kill switch in the console: stop (members: agents that act for them), restart
 * (the person the agent acts for, an owner or an admin), and "stop every agent" (owners, admins).
 * Session only: no key or token reaches these routes.
 */
export const killSwitchRoutes: Plugin<{
  killSwitch: KillSwitch;
  agents: AgentsService;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-kill-switch',
  register(server, { killSwitch, agents, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const write = { onPreAuth: guards.consoleWrite };
    const params = (request: Request) => request.params as { wid: string; aid: string };
    /** A console route's options: the session, the permission it needs, and the write guard for a write. */
    const consoleRoute = (permission: RoutePermission, writes: boolean) => ({
      auth: session,
      app: { permission },
      ...(writes ? { ext: write } : {}),
    });
    const who = (request: Request): Who => {
      const { actor, user, role } = member(request);
      return { actor, userId: user.id, role };
    };

    const token = (request: Request) => {
      const c = machineCaller(request);
      return { wid: c.workspaceId, actor: c.actor, tokenId: c.tokenId, person: c.person };
    };

    server.route([
      {
        // A token freezes one agent (hold `token`); no token route lifts a hold.
        method: 'POST',
        path: '/v1/admin/agents/{aid}/freeze',
        options: {
          auth: SERVICE_TOKEN,
          plugins: { svc: { tokenScope: 'agents:freeze', validationTypeByField: { reason: 'reason_required' } } },
          validate: { params: Joi.object({ aid }), payload: reason },
        },
        async handler(request) {
          const by = token(request);
          const { aid: a } = request.params as { aid: string };
          const reason = (request.payload as { reason: string }).reason;
          // A person signed in with svc login stops as Stop in the console does: hold `owner`, lifted by a restart.
          if (by.person) {
            const who = { actor: by.actor, ...by.person };
            await agents.manageable(by.wid, a, who);
            return agents.view(await killSwitch.stop(by.wid, a, { hold: 'owner', reason }, who));
          }
          return agents.view(
            await killSwitch.stop(by.wid, a, { hold: 'token', reason }, { actor: by.actor, tokenId: by.tokenId }),
          );
        },
      },
      {
        // Bulk freeze: 200 { frozen, agentIds }, or 202 { status: pending, approvalId, count } past the ceiling.
        method: 'POST',
        path: '/v1/admin/freezes',
        options: {
          auth: SERVICE_TOKEN,
          plugins: {
            svc: {
              tokenScope: 'agents:freeze',
              validationTypeByField: {
                selector: 'invalid_selector',
                reason: 'reason_required',
                confirmCount: 'confirm_count_required',
              },
            },
          },
          validate: { payload: bulkFreeze },
        },
        async handler(request, h) {
          const by = token(request);
          const body = request.payload as { selector: Selector; reason: string; confirmCount?: unknown };
          // A person (an owner or an admin, oauth/device/person-access.ts) freezes as the console's Stop does:
          // hold `owner` on each agent, no ceiling; a token holds `token` and waits past the ceiling.
          const freezer = by.person ? { actor: by.actor, ...by.person } : { actor: by.actor, tokenId: by.tokenId };
          const outcome = await killSwitch.freezeSelected(by.wid, body, freezer);
          return h.response(toFreezeAnswer(outcome)).code(outcome.kind === 'pending' ? 202 : 200);
        },
      },
      {
        // "Stop every agent" by a token (agents:freeze): past the ceiling it waits for a person (202).
        method: 'POST',
        path: '/v1/admin/stop-all',
        options: {
          auth: SERVICE_TOKEN,
          plugins: { svc: { tokenScope: 'agents:freeze', validationTypeByField: { reason: 'reason_required' } } },
          validate: { payload: reason },
        },
        async handler(request, h) {
          const by = token(request);
          if (by.person) {
            const reason = (request.payload as { reason: string }).reason;
            await killSwitch.stopAll(by.wid, reason, { actor: by.actor, ...by.person });
            return killSwitch.stopAllState(by.wid);
          }
          const outcome = await killSwitch.stopAllByToken(by.wid, (request.payload as { reason: string }).reason, {
            actor: by.actor,
            tokenId: by.tokenId,
          });
          if (outcome.kind === 'pending')
            return h.response({ status: 'pending', approvalId: outcome.approvalId, count: outcome.count }).code(202);
          return outcome.state;
        },
      },
      {
        method: 'GET',
        path: '/v1/admin/stop-all',
        options: { auth: SERVICE_TOKEN, plugins: { svc: { tokenScope: 'agents:read' } } },
        handler: (request) => killSwitch.stopAllState(token(request).wid),
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/agents/{aid}/stop',
        options: {
          ...consoleRoute('agents.manage', true),
          validate: { params: Joi.object({ wid, aid }), payload: reason },
        },
        async handler(request) {
          const { wid: w, aid: a } = params(request);
          const by = who(request);
          await agents.manageable(w, a, by);
          return agents.view(
            await killSwitch.stop(w, a, { hold: 'owner', reason: (request.payload as { reason: string }).reason }, by),
          );
        },
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/agents/{aid}/restart',
        // Anyone of the workspace reaches the agents service, which decides who may restart this agent.
        options: {
          ...consoleRoute('workspace.read', true),
          // The reason is optional (the console asks for one): recorded with the restart.
          validate: {
            params: Joi.object({ wid, aid }),
            payload: Joi.object({ reason: Joi.string().trim().max(500).allow('') }).allow(null),
          },
        },
        async handler(request) {
          const { wid: w, aid: a } = params(request);
          const why = (request.payload as { reason?: string } | null)?.reason || undefined;
          return agents.view(await killSwitch.restart(w, a, who(request), why));
        },
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/stop-all',
        options: { ...consoleRoute('workspace.read', false), validate: { params: Joi.object({ wid }) } },
        handler: (request) => killSwitch.stopAllState(member(request).wid),
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/stop-all',
        options: {
          ...consoleRoute('workspace.stopAll', true),
          validate: { params: Joi.object({ wid }), payload: reason },
        },
        async handler(request) {
          const { wid: w } = params(request);
          await killSwitch.stopAll(w, (request.payload as { reason: string }).reason, who(request));
          return killSwitch.stopAllState(w);
        },
      },
      {
        method: 'DELETE',
        path: '/api/w/{wid}/stop-all',
        options: { ...consoleRoute('workspace.stopAll', true), validate: { params: Joi.object({ wid }) } },
        async handler(request) {
          const { wid: w } = params(request);
          await killSwitch.startAll(w, who(request));
          return killSwitch.stopAllState(w);
        },
      },
    ]);
  },
};
