import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import { member } from '../../http/auth/permission.js';
import type { Guards } from '../../http/guards.js';
import { wid } from '../../http/params.js';
import type { Budgets } from '../budgets.js';
import type { CallLog } from '../calls.js';
import { budgetSchema, type BudgetInput } from '../schemas.js';
import type { Gateway } from '../service.js';
import { bucketCount, MAX_BUCKETS, usageSeries } from '../usage.js';

/**
 * The model gateway in the console: the workspace's gateway settings (every member reads them;
 * owners and admins change them), usage and spend over time and budgets with their steps
 * (owners, admins, analysts), and a budget set (owners, admins).
 */
export function gatewayConsoleRoutes(deps: {
  gateway: Gateway;
  budgets: Budgets;
  calls: CallLog;
  guards: Guards;
  session: { strategies: string[] };
}): ServerRoute[] {
  const { gateway, budgets, calls, guards, session } = deps;
  const write = { onPreAuth: guards.consoleWrite };
  return [
    {
      method: 'GET',
      path: '/api/w/{wid}/gateway',
      options: { auth: session, app: { permission: 'workspace.read' }, validate: { params: Joi.object({ wid }) } },
      handler: (request) => gateway.settingsOf(member(request).wid),
    },
    {
      // The workspace's enforcement and data-loss mode (owners, admins); a ledger record.
      method: 'PUT',
      path: '/api/w/{wid}/gateway',
      options: {
        auth: session,
        app: { permission: 'gateway.manage' },
        ext: write,
        validate: {
          params: Joi.object({ wid }),
          payload: Joi.object({
            enforcement: Joi.string().valid('enforce', 'shadow'),
            dataLoss: Joi.string().valid('off', 'redact', 'block'),
          }).min(1),
        },
      },
      handler(request) {
        const { wid: w, actor } = member(request);
        return gateway.configure(
          w,
          request.payload as { enforcement?: 'enforce' | 'shadow'; dataLoss?: 'off' | 'redact' | 'block' },
          actor,
        );
      },
    },
    {
      // Usage and spend over time (owners, admins, analysts): the console's usage section.
      method: 'GET',
      path: '/api/w/{wid}/usage',
      options: {
        auth: session,
        app: { permission: 'usage.read' },
        validate: {
          params: Joi.object({ wid }),
          query: Joi.object({
            from: Joi.date().iso().required(),
            to: Joi.date().iso().greater(Joi.ref('from')).required(),
            by: Joi.string().valid('model', 'team', 'key').default('model'),
            bucket: Joi.string().valid('hour', 'day').default('day'),
          }).custom((q: { from: Date; to: Date; bucket: 'hour' | 'day' }, helpers) =>
            bucketCount(q.from, q.to, q.bucket) > MAX_BUCKETS
              ? helpers.message({ custom: `the window holds more than ${MAX_BUCKETS} ${q.bucket}s: narrow it` })
              : q,
          ),
        },
      },
      async handler(request) {
        const { wid: w } = member(request);
        await calls.flush();
        const q = request.query as { from: Date; to: Date; by: 'model' | 'team' | 'key'; bucket: 'hour' | 'day' };
        return usageSeries(calls, w, q);
      },
    },
    {
      // Budgets with what they used this period and the ladder's step reached (owners, admins, analysts).
      method: 'GET',
      path: '/api/w/{wid}/budgets',
      options: { auth: session, app: { permission: 'usage.read' }, validate: { params: Joi.object({ wid }) } },
      handler: async (request) => ({ data: await budgets.overview(member(request).wid), next: null }),
    },
    {
      // A budget set in the console (owners, admins): the same body and checks as POST /v1/admin/budgets.
      method: 'POST',
      path: '/api/w/{wid}/budgets',
      options: {
        auth: session,
        app: { permission: 'gateway.manage' },
        ext: write,
        // The body's faults are invalid_budget, as on POST /v1/admin/budgets; a bad path stays invalid_request.
        plugins: {
          svc: {
            validationTypeByField: Object.fromEntries(
              ['scope', 'amountMicros', 'period', 'ladder'].map((f) => [f, 'invalid_budget' as const]),
            ),
          },
        },
        validate: { params: Joi.object({ wid }), payload: budgetSchema },
      },
      async handler(request, h) {
        const { wid: w, actor } = member(request);
        return h.response(await budgets.create(w, request.payload as BudgetInput, actor)).code(201);
      },
    },
  ];
}
