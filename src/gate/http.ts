import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import { invalidField } from '../errors/app-error.js';
import { AGENT_KEY, caller } from '../http/auth/callers.js';
import {
  authorizeSchema,
  idempotencyKeySchema,
  sessionIdSchema,
  settleSchema,
  type AuthorizeInput,
  type SettleInput,
} from './schemas.js';
import type { GateCaller, Gate } from './service.js';

/**
 * The gate's routes (agent key; docs/gate.md#the-gate). Every answer after authentication
 * carries ratelimit-limit, ratelimit-remaining and ratelimit-reset for the calling agent
 * (the IETF RateLimit headers); the agent-key strategy takes the limit (auth/agent-key.ts), before the body is
 * read. An id that is no action of this agent, however long, is 404 not_found.
 */
const actionId = Joi.object({ id: Joi.string().max(1024).required() });
const gate = { svc: { gateRateLimit: true } };

function gateCaller(request: Request): GateCaller {
  const c = caller(request, 'agent');
  return { workspaceId: c.workspaceId, agentId: c.agent.id };
}

function headerValue(request: Request, name: string): string | undefined {
  const v = request.headers[name];
  return typeof v === 'string' ? v : undefined;
}

export const gateRoutes: Plugin<{ gate: Gate }> = {
  name: 'svc-gate',
  register(server, { gate: service }) {
    server.route([
      {
        method: 'POST',
        path: '/v1/actions/authorize',
        options: {
          auth: AGENT_KEY,
          plugins: { svc: { ...gate.svc, errors: ['idempotency_conflict'] } },
          validate: { payload: authorizeSchema },
        },
        async handler(request) {
          const input = request.payload as AuthorizeInput;
          const header = headerValue(request, 'idempotency-key');
          if (header !== undefined) {
            const { error } = idempotencyKeySchema.validate(header);
            if (error)
              throw invalidField(
                'idempotency-key',
                `the idempotency-key header ${error.message.replace(/^"value" /, '')}`,
              );
            if (input.idempotencyKey !== undefined && input.idempotencyKey !== header) {
              throw invalidField(
                'idempotencyKey',
                '"idempotencyKey" differs from the idempotency-key header; send one, or the same in both',
              );
            }
          }
          const session = headerValue(request, 'x-svc-client-session');
          if (session !== undefined && sessionIdSchema.validate(session).error) {
            throw invalidField(
              'x-svc-client-session',
              'the x-svc-client-session header must be 1 to 128 printable characters',
            );
          }
          const { action } = await service.authorize(
            gateCaller(request),
            { ...input, ...(header !== undefined ? { idempotencyKey: header } : {}) },
            { sessionId: session },
          );
          return action;
        },
      },
      {
        method: 'GET',
        path: '/v1/actions/{id}',
        options: { auth: AGENT_KEY, plugins: gate, validate: { params: actionId } },
        handler: (request) => service.get(gateCaller(request), (request.params as { id: string }).id),
      },
      {
        method: 'POST',
        path: '/v1/actions/{id}/settle',
        options: {
          auth: AGENT_KEY,
          plugins: {
            svc: {
              gateRateLimit: true,
              validationTypeByField: { status: 'invalid_status', amount: 'invalid_amount' },
              errors: ['already_settled', 'not_allowed', 'invalid_amount'],
            },
          },
          validate: { params: actionId, payload: settleSchema },
        },
        handler: (request) =>
          service.settle(gateCaller(request), (request.params as { id: string }).id, request.payload as SettleInput),
      },
    ]);
  },
};
