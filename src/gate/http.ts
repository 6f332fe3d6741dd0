import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import { AGENT_KEY } from '../http/auth/callers.js';

/**
 * The agent's read of its own actions (SPEC.md 4.1). The foundation has no action records yet
 * (they arrive with the gate), so every id is one this agent does not have: 404 not_found.
 */
export const gateRoutes: Plugin<Record<string, never>> = {
  name: 'svc-gate',
  register(server) {
    server.route({
      method: 'GET', path: '/v1/actions/{id}',
      options: { auth: AGENT_KEY, validate: { params: Joi.object({ id: Joi.string().max(64).required() }) } },
      handler() {
        throw new AppError('not_found', { message: 'No action with that id for this agent.' });
      },
    });
  },
};
