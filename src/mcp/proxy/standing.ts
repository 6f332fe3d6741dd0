import { readStanding } from '../../agents/standing.js';
import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/index.js';
import type { ProxyCaller } from './types.js';

/**
 * The proxy's enforcement point of an agent's standing: a stopped agent's request is refused
 * before any upstream is asked. Read from the store at every request (a stop takes effect on the
 * very next one).
 */
export async function refuseIfStopped(store: Store, who: ProxyCaller): Promise<void> {
  const standing = await readStanding(store, who.workspaceId, who.agentId);
  if (standing.stopped) {
    throw new AppError('agent_stopped', {
      message: `Agent ${who.agentId} is stopped (${standing.reason}); the tool call was not sent.`,
      details: { hold: standing.hold, stopped: standing.stoppedBy, agentId: who.agentId },
    });
  }
}

/** Whether a proxied call would pass the standing check, for drills. */
export async function admitsAgent(
  store: Store,
  wid: string,
  agentId: string,
): Promise<{ admitted: true } | { admitted: false; type: string }> {
  try {
    await refuseIfStopped(store, { workspaceId: wid, agentId });
    return { admitted: true };
  } catch (err) {
    return { admitted: false, type: (err as AppError).type };
  }
}
