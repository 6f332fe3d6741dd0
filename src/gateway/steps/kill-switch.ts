import { AppError } from '../../errors/app-error.js';
import { readStanding } from '../../agents/standing.js';
import type { Store } from '../../store/index.js';
import type { KeyRecord } from '../../keys/records.js';
import { gatewayRepo } from '../repo.js';
import type { AsyncStep } from './context.js';

/**
 * Kill switch. An agent key of a stopped agent (a hold, or "stop every agent"), or any key
 * bound to no one agent while "stop every agent" stands, is 403 agent_stopped; nothing is sent.
 * Standing is read from the store at each request, so a freeze by another process applies to the
 * very next one.
 */
export async function refuseIfStopped(store: Store, key: Pick<KeyRecord, 'workspaceId' | 'agentId'>): Promise<void> {
  if (key.agentId) {
    const standing = await readStanding(store, key.workspaceId, key.agentId);
    if (standing.stopped) {
      throw new AppError('agent_stopped', {
        message: `Agent ${key.agentId} is stopped (${standing.reason}); nothing was sent.`,
        details: { hold: standing.hold, stopped: standing.stoppedBy, agentId: key.agentId },
      });
    }
    return;
  }
  const stopAll = await gatewayRepo(store).stopAll(key.workspaceId);
  if (stopAll) {
    throw new AppError('agent_stopped', {
      message: `Every agent of this workspace is stopped (${stopAll.reason}), and this key is bound to no one agent; nothing was sent.`,
      details: { hold: 'workspace', stopped: 'workspace', agentId: null },
    });
  }
}

export const killSwitch: AsyncStep = {
  name: 'kill-switch',
  async run(ctx, env) {
    await refuseIfStopped(env.store, ctx.key);
  },
};
