import { AppError } from '../../errors/app-error.js';
import { speaksResponses } from '../responses/attempt.js';
import type { SyncStep } from './context.js';

/**
 * 4b. Responses state (POST /v1/responses only). `store: true`, `previous_response_id` and
 * `conversation` need a vendor that keeps responses: the candidates keep to models at a provider
 * that speaks Responses (`responses: true`), and with none, 400 invalid_request names the field
 * and the fix (send the whole conversation in `input`, without store).
 */
const STATEFUL = ['store', 'previous_response_id', 'conversation'] as const;

export const responsesState: SyncStep = {
  name: 'responses-state',
  run(ctx, env) {
    if (ctx.req.shape !== 'responses') return;
    const { body } = ctx;
    const asked = STATEFUL.filter((f) => (f === 'store' ? body.store === true : body[f] != null));
    if (asked.length === 0) return;
    const keeping = ctx.candidates.filter((m) => speaksResponses(env.providers.get(m.provider)!));
    if (keeping.length > 0) {
      ctx.candidates = keeping;
      return;
    }
    throw new AppError('invalid_request', {
      message: `No model that may serve this request is at a vendor that keeps responses, so ${asked.join(' and ')} cannot be honoured.`,
      fix: 'Send the whole conversation in input (the earlier output items included) and leave store unset or false; or configure a provider with responses: true.',
      details: {
        errors: asked.map((field) => ({
          field,
          message:
            field === 'store'
              ? 'store: true needs a vendor that keeps responses; leave it unset or false'
              : `${field} needs a vendor that keeps responses; send the conversation in input instead`,
        })),
      },
    });
  },
};
