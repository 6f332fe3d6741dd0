import { AppError } from '../../errors/app-error.js';
import { speaksResponses } from '../responses/attempt.js';
import type { VendorKind } from '../translate/carry.js';
import { uncarried, uncarriedResponses, type Fault } from '../translate/uncarried.js';
import { responsesToChatRequest } from '../translate/responses-api.js';
import type { VendorJson as Json } from '../vendor-json.js';
import type { SyncStep } from './context.js';

/**
 * What each vendor kind can carry (chat completions, messages and Responses): a field that a
 * candidate's vendor kind has no way to carry (translate/uncarried.ts) keeps the
 * candidates to those that can; with none left, 400 invalid_request names each field, why, and
 * the fix, before anything is sent. Refused by name, never dropped.
 */
export const carry: SyncStep = {
  name: 'carry',
  run(ctx, env) {
    const shape = ctx.req.shape;
    if (shape !== 'openai' && shape !== 'anthropic' && shape !== 'responses') return;
    let chat: Json | null = null;
    const faultsOf = (kind: VendorKind, model: string, responses: boolean): Fault[] => {
      if (shape !== 'responses') return uncarried(shape, ctx.body, kind, model);
      if (responses) return [];
      chat ??= responsesToChatRequest(ctx.body);
      return uncarriedResponses(ctx.body, chat, kind, model);
    };
    let first: Fault[] | null = null;
    const keep = ctx.candidates.filter((m) => {
      const provider = env.providers.get(m.provider);
      if (!provider) return true;
      const faults = faultsOf(provider.kind as VendorKind, m.upstreamModel, speaksResponses(provider));
      if (faults.length > 0) first ??= faults;
      return faults.length === 0;
    });
    if (!first) return;
    if (keep.length > 0) {
      ctx.candidates = keep;
      return;
    }
    const faults: Fault[] = first;
    throw new AppError('invalid_request', {
      message: `No model that may serve this request can carry ${faults.map((f) => f.field).join(', ')}: its vendor has no counterpart, and svc refuses rather than drop what was asked.`,
      fix: 'Leave those fields out, or route the request to a model at a vendor of the shape they belong to (docs/gateway.md, "What each vendor kind carries").',
      details: { errors: faults },
    });
  },
};
