import { screen } from '../screen.js';
import type { SyncStep } from './context.js';

/**
 * Data loss. The prompt is screened in the workspace's mode (else the deployment's): block
 * refuses a finding (400 sensitive_data_blocked, counts by kind, never a value); redact replaces
 * each finding in the body before it leaves, and the counts are kept for x-svc-redacted.
 */
export const dataLoss: SyncStep = {
  name: 'data-loss',
  run(ctx, env) {
    ctx.redacted = screen(ctx.body, ctx.own?.dataLoss ?? env.settings.dataLoss);
  },
};
