import { AppError } from '../../errors/app-error.js';
import { checkOversight, classify as classifyPrompt, readSteering } from '../steering.js';
import { EMBEDDING } from '../routing.js';
import { gatewayRepo } from '../repo.js';
import type { AsyncStep } from './context.js';

/**
 * Classification. The steering headers (400 invalid_request naming a malformed one); the
 * task (an x-svc-task-id must name a task of this workspace) and the session; the key's policy
 * profile (one that is not configured admits no model: 409 policy_conflict); the enforcement
 * (the profile's, else the workspace's, else the deployment's); the task class (the header, else
 * the key's default; else 400 unclassified_request when enforcing, or the classifier's guess in
 * shadow; POST /v1/embeddings is always `embedding`); a high-risk class needs acknowledged human
 * oversight.
 */
export const classify: AsyncStep = {
  name: 'classify',
  async run(ctx, env) {
    const { key, wid, headers } = ctx;
    const steering = readSteering(ctx.req.headers);
    ctx.steering = steering;
    ctx.taskId = steering.taskId ?? env.ids.id('task');
    ctx.sessionId = steering.clientSession ?? `ses_${env.ids.id('req').slice(4)}`;
    headers['x-svc-task-id'] = ctx.taskId;
    headers['x-svc-session'] = ctx.sessionId;
    if (steering.taskId && !(await env.calls.taskKnown(wid, steering.taskId))) {
      throw new AppError('invalid_request', {
        message: `No task ${steering.taskId} in this workspace.`,
        details: {
          errors: [{ field: 'x-svc-task-id', message: 'names no task of this workspace; omit it to start a new task' }],
        },
      });
    }
    ctx.profile = key.policyProfile ? (env.profiles.get(key.policyProfile) ?? null) : null;
    if (key.policyProfile && !ctx.profile) {
      throw new AppError('policy_conflict', {
        message: `The key's policy profile ${key.policyProfile} is not configured, so no model is admitted.`,
        details: { relaxations: [] },
      });
    }
    ctx.own = await gatewayRepo(env.store).settingsOf(wid);
    ctx.enforcement = ctx.profile?.enforcement ?? ctx.own?.enforcement ?? env.settings.enforcement;
    // POST /v1/embeddings is task class embedding (or a subclass the header names), whatever the key's default.
    let taskClass =
      ctx.req.shape === 'embeddings'
        ? steering.taskClass?.startsWith(`${EMBEDDING}.`)
          ? steering.taskClass
          : EMBEDDING
        : (steering.taskClass ?? key.defaultTaskClass);
    if (!taskClass) {
      if (ctx.enforcement === 'enforce') throw new AppError('unclassified_request');
      taskClass = classifyPrompt(ctx.prompt(), env.settings.classifier.rules, env.settings.classifier.fallback);
    }
    ctx.taskClass = taskClass;
    checkOversight(taskClass, env.settings.highRiskTaskClasses, steering.oversight);
  },
};
