import { AppError, invalidField } from '../errors/app-error.js';
import type { ClassifierRule } from '../settings/schema.js';
import { OBJECTIVES, type Objective } from './routing.js';

/**
 * The steering headers (`x-svc-*`, docs/gateway.md), read and checked once per model request.
 * Rules:
 * - `x-svc-task-class` is dotted words (`code.review`); `x-svc-task-id` a `task_` id;
 *   `x-svc-objective` one of OBJECTIVES (default balanced); `x-svc-dry-run` `true` or `false`;
 *   `x-svc-client-session` 1 to 128 printable ASCII characters; `x-svc-human-oversight` is
 *   `acknowledged` when sent. Anything else is 400 invalid_request naming the header.
 * - Without a class from the header or the key, the built-in classifier (shadow mode only)
 *   names one from the prompt: the first rule with a keyword in the text, else the fallback.
 */
export interface Steering {
  taskClass: string | null;
  taskId: string | null;
  objective: Objective;
  dryRun: boolean;
  clientSession: string | null;
  oversight: boolean;
}

const TASK_CLASS = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/i;
const TASK_ID = /^task_[0-9A-Za-z]{22}$/;
const PRINTABLE = /^[\x20-\x7e]{1,128}$/;

const one = (headers: Record<string, string | string[] | undefined>, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
};

export function readSteering(headers: Record<string, string | string[] | undefined>): Steering {
  const taskClass = one(headers, 'x-svc-task-class');
  if (taskClass !== undefined && (taskClass.length > 128 || !TASK_CLASS.test(taskClass))) {
    throw invalidField('x-svc-task-class', 'x-svc-task-class must be dotted words such as code.review');
  }
  const taskId = one(headers, 'x-svc-task-id');
  if (taskId !== undefined && !TASK_ID.test(taskId))
    throw invalidField(
      'x-svc-task-id',
      'x-svc-task-id must be a task id (task_ and 22 letters or digits) from an earlier x-svc-task-id answer',
    );
  const objective = one(headers, 'x-svc-objective') ?? 'balanced';
  if (!(OBJECTIVES as readonly string[]).includes(objective))
    throw invalidField('x-svc-objective', `x-svc-objective must be one of ${OBJECTIVES.join(', ')}`);
  const dryRun = one(headers, 'x-svc-dry-run');
  if (dryRun !== undefined && dryRun !== 'true' && dryRun !== 'false')
    throw invalidField('x-svc-dry-run', 'x-svc-dry-run must be true or false');
  const session = one(headers, 'x-svc-client-session');
  if (session !== undefined && !PRINTABLE.test(session))
    throw invalidField('x-svc-client-session', 'x-svc-client-session must be 1 to 128 printable characters');
  const oversight = one(headers, 'x-svc-human-oversight');
  if (oversight !== undefined && oversight !== 'acknowledged')
    throw invalidField('x-svc-human-oversight', 'x-svc-human-oversight must be acknowledged when sent');
  return {
    taskClass: taskClass?.toLowerCase() ?? null,
    taskId: taskId ?? null,
    objective: objective as Objective,
    dryRun: dryRun === 'true',
    clientSession: session ?? null,
    oversight: oversight === 'acknowledged',
  };
}

/** The class a prompt's words suggest (shadow mode's classifier). */
export function classify(text: string, rules: readonly ClassifierRule[], fallback: string): string {
  const lower = text.toLowerCase();
  return rules.find((r) => r.keywords.some((k) => lower.includes(k)))?.taskClass ?? fallback;
}

/** High-risk classes (exact, or a parent ending in `.*`) need a person's acknowledged oversight. */
export function checkOversight(taskClass: string, highRisk: readonly string[], acknowledged: boolean): void {
  const risky = highRisk.some(
    (c) =>
      c === taskClass || (c.endsWith('.*') && (taskClass === c.slice(0, -2) || taskClass.startsWith(c.slice(0, -1)))),
  );
  if (risky && !acknowledged) {
    throw new AppError('invalid_request', {
      message: `Task class ${taskClass} is high-risk: a person must review this work, and the request must say so.`,
      fix: 'Send x-svc-human-oversight: acknowledged once a person reviews the output.',
      details: {
        errors: [{ field: 'x-svc-human-oversight', message: `required for the high-risk task class ${taskClass}` }],
      },
    });
  }
}
