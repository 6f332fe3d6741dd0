import { AppError } from '../../errors/app-error.js';
import { eligibleModels, profileBlockers } from '../routing.js';
import type { SyncStep } from './context.js';

/**
 * Routing. The eligible models for the task class, the key's policy profile and the objective,
 * in order. Enforcing, they are the candidates, and none is 409 policy_conflict with the
 * relaxations that would admit one. In shadow mode the requested model serves (400
 * invalid_request when the catalogue has no such model) and the routing choice is only reported;
 * the key's policy profile still binds (409 policy_conflict).
 */
export const route: SyncStep = {
  name: 'route',
  run(ctx, env) {
    const { settings } = env;
    const taskClass = ctx.taskClass ?? '';
    const requested = typeof ctx.body.model === 'string' ? ctx.body.model : null;
    ctx.requested = requested;
    const routed = eligibleModels({
      models: settings.models,
      taskClass,
      objective: ctx.steering.objective,
      profile: ctx.profile,
      home: settings.home,
      requested,
      observedLatencyMs: (id) => env.health.latencyMs(id),
    });
    ctx.wouldRouteTo = routed.models[0]?.id ?? null;
    if (ctx.enforcement === 'enforce') {
      if (routed.models.length === 0)
        throw new AppError('policy_conflict', {
          message: `No configured model may serve task class ${taskClass} under this key's policy.`,
          details: { taskClass, relaxations: routed.relaxations },
        });
      ctx.candidates = routed.models;
      return;
    }
    const asked = requested ? env.catalogue.get(requested) : undefined;
    if (!asked) {
      throw new AppError('invalid_request', {
        message: `Model ${requested ?? '(none)'} is not in this deployment's catalogue.`,
        fix: 'Name a model that GET /v1/models lists.',
        details: { errors: [{ field: 'model', message: 'names no model of the catalogue' }] },
      });
    }
    // Shadow mode observes routing, not the key's policy: a profile's models, providers and
    // jurisdictions still bind.
    const relax = profileBlockers(asked, ctx.profile, settings.home);
    if (relax.length > 0) {
      const profile = ctx.profile!;
      throw new AppError('policy_conflict', {
        message: `The key's policy profile ${profile.id} does not admit ${asked.id}.`,
        details: {
          taskClass,
          relaxations: [
            {
              model: asked.id,
              provider: asked.provider,
              jurisdiction: asked.jurisdiction,
              priceMicrosPerMTokIn: asked.priceMicrosPerMTokIn,
              priceMicrosPerMTokOut: asked.priceMicrosPerMTokOut,
              relax,
              signOff: profile.signOff,
            },
          ],
        },
      });
    }
    ctx.candidates = [asked];
  },
};
