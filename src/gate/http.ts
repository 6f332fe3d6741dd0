import Joi from 'joi';
import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import { AppError, invalidField } from '../errors/app-error.js';
import { AGENT_KEY, caller } from '../http/auth/callers.js';
import { createRateLimiter } from '../http/rate-limit.js';
import type { Clock } from '../lib/clock.js';
import { authorizeSchema, idempotencyKeySchema, sessionIdSchema, settleSchema, type AuthorizeInput, type SettleInput } from './schemas.js';
import type { GateCaller, Gate } from './service.js';

/**
 * The gate's routes (agent key; SPEC.md 4.1, API.md 3). Every answer after authentication
 * carries ratelimit-limit, ratelimit-remaining and ratelimit-reset for the calling agent
 * (SPEC.md 7.6); past the per-minute limit: 429 rate_limited with retry-after.
 */
const actionId = Joi.object({ id: Joi.string().max(64).required() });

function gateCaller(request: Request): GateCaller {
  const c = caller(request, 'agent');
  return { workspaceId: c.workspaceId, agentId: c.agent.id };
}

function headerValue(request: Request, name: string): string | undefined {
  const v = request.headers[name];
  return typeof v === 'string' ? v : undefined;
}

export const gateRoutes: Plugin<{ gate: Gate; clock: Clock; perMinute: number }> = {
  name: 'svc-gate',
  register(server, { gate, clock, perMinute }) {
    const limiter = createRateLimiter({ limit: perMinute, clock });
    const rateLimit = {
      method(request: Request, h: ResponseToolkit) {
        const d = limiter.take(gateCaller(request).agentId);
        request.app.responseHeaders = {
          'ratelimit-limit': String(d.limit), 'ratelimit-remaining': String(d.remaining), 'ratelimit-reset': String(d.resetSeconds),
        };
        if (!d.allowed) {
          throw new AppError('rate_limited', { message: `This agent sent more than ${d.limit} gate requests this minute.`, headers: { 'retry-after': String(d.resetSeconds) } });
        }
        return h.continue;
      },
    };
    // The limit is taken after authentication (it is per agent) and before the body is judged.
    const ext = { onPostAuth: rateLimit };

    server.route([
      {
        method: 'POST', path: '/v1/actions/authorize',
        options: { auth: AGENT_KEY, ext, validate: { payload: authorizeSchema } },
        async handler(request) {
          const input = request.payload as AuthorizeInput;
          const header = headerValue(request, 'idempotency-key');
          if (header !== undefined) {
            const { error } = idempotencyKeySchema.validate(header);
            if (error) throw invalidField('idempotency-key', `the idempotency-key header ${error.message.replace(/^"value" /, '')}`);
            if (input.idempotencyKey !== undefined && input.idempotencyKey !== header) {
              throw invalidField('idempotencyKey', '"idempotencyKey" differs from the idempotency-key header; send one, or the same in both');
            }
          }
          const session = headerValue(request, 'x-svc-client-session');
          if (session !== undefined && sessionIdSchema.validate(session).error) {
            throw invalidField('x-svc-client-session', 'the x-svc-client-session header must be 1 to 128 printable characters');
          }
          const { action } = await gate.authorize(gateCaller(request), { ...input, ...(header !== undefined ? { idempotencyKey: header } : {}) }, { sessionId: session });
          return action;
        },
      },
      {
        method: 'GET', path: '/v1/actions/{id}',
        options: { auth: AGENT_KEY, ext, validate: { params: actionId } },
        handler: (request) => gate.get(gateCaller(request), (request.params as { id: string }).id),
      },
      {
        method: 'POST', path: '/v1/actions/{id}/settle',
        options: {
          auth: AGENT_KEY, ext,
          plugins: { svc: { validationTypeByField: { status: 'invalid_status', amount: 'invalid_amount' } } },
          validate: { params: actionId, payload: settleSchema },
        },
        handler: (request) => gate.settle(gateCaller(request), (request.params as { id: string }).id, request.payload as SettleInput),
      },
    ]);
  },
};
