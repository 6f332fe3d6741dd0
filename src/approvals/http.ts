import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import type { Guards } from '../http/guards.js';
import { machineCaller, SERVICE_TOKEN } from '../http/auth/callers.js';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { Approvals, ApproveOutcome, Decider } from './service.js';
import { pageOf, wid } from '../http/params.js';

const apid = Joi.string().max(64).required();
const note = Joi.object({ note: Joi.string().trim().max(1000).allow('') }).allow(null);

/**
 * Approvals in the console (docs/gate.md#approvals-and-the-kill-switch): list (members and up), approve and deny
 * (signed-in people only; the rules of approvals/service.ts decide who).
 */
export function answer(outcome: ApproveOutcome) {
  if (outcome.kind === 'waiting_for_second') {
    throw new AppError('second_person_required', { details: { approval: outcome.approval } });
  }
  if (outcome.kind === 'expired') {
    throw new AppError('approval_closed', {
      message: `Approval ${outcome.approval.id} expired at ${outcome.approval.expiresAt}; its action was denied.`,
    });
  }
  return outcome.approval;
}

export const approvalsRoutes: Plugin<{
  approvals: Approvals;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-approvals',
  register(server, { approvals, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    /** Approve and deny: people who may decide; the approval's own rules then decide who (service.ts). */
    const decide = {
      auth: session,
      app: { permission: 'approvals.decide' },
      ext: { onPreAuth: guards.consoleWrite },
    } as const;
    const decider = (request: Request): Decider => {
      const { user, actor, role } = member(request);
      return { userId: user.id, actor, role };
    };
    const body = (request: Request) => (request.payload as { note?: string } | null)?.note || null;

    server.route([
      {
        // Automation reads what waits for people (approvals:read); it can never decide.
        method: 'GET',
        path: '/v1/admin/approvals',
        options: {
          auth: SERVICE_TOKEN,
          plugins: { svc: { tokenScope: 'approvals:read' } },
          validate: {
            query: Joi.object({
              limit: Joi.number().integer().min(1).max(200).default(50),
              cursor: Joi.string().max(64),
            }),
          },
        },
        handler(request) {
          return approvals.list(machineCaller(request).workspaceId, {
            status: 'pending',
            ...pageOf(request.query),
          });
        },
      },
      {
        method: 'GET',
        path: '/v1/admin/approvals/suggestions',
        options: { auth: SERVICE_TOKEN, plugins: { svc: { tokenScope: 'approvals:read' } } },
        handler: async (request) => ({
          data: await approvals.suggestions(machineCaller(request).workspaceId),
        }),
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/approvals',
        options: {
          auth: session,
          app: { permission: 'approvals.read' },
          validate: {
            params: Joi.object({ wid }),
            query: Joi.object({
              status: Joi.string().valid('pending', 'approved', 'denied', 'expired'),
              limit: Joi.number().integer().min(1).max(200).default(50),
              cursor: Joi.string().max(64),
            }),
          },
        },
        handler(request) {
          const { wid: w, user, role } = member(request);
          const { status } = request.query as { status?: 'pending' };
          return approvals.list(w, {
            ...pageOf(request.query),
            ...(status ? { status } : {}),
            ...(role === 'member' ? { onlyFor: user.id } : {}),
          });
        },
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/approvals/{apid}/approve',
        options: { ...decide, validate: { params: Joi.object({ wid, apid }), payload: note } },
        async handler(request) {
          const { wid: w, apid: a } = request.params as { wid: string; apid: string };
          return answer(await approvals.approve(w, a, decider(request), body(request)));
        },
      },
      {
        method: 'POST',
        path: '/api/w/{wid}/approvals/{apid}/deny',
        options: { ...decide, validate: { params: Joi.object({ wid, apid }), payload: note } },
        async handler(request) {
          const { wid: w, apid: a } = request.params as { wid: string; apid: string };
          return answer(await approvals.deny(w, a, decider(request), body(request)));
        },
      },
    ]);
  },
};
