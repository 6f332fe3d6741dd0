import type { Request, Server } from '@hapi/hapi';
import { AppError } from '../../errors/app-error.js';
import { hasPrefix } from '../../lib/ids.js';
import { svcOptions } from '../route-options.js';
import { WORKSPACE_KEY, credentials, expectedCredential, type KeyResolver } from './callers.js';
import { bearer } from './bearer.js';

/**
 * Workspace key (docs/security.md#security-model): Authorization: Bearer ask_… or x-api-key: ask_… (some vendors'
 * SDKs send the latter). Routes say which keys they take in `plugins.svc.keyScope`:
 * - 'admin': admin keys only (others: 403 forbidden);
 * - 'any-workspace' (default): inference or admin keys; an agent key: 403 forbidden;
 * - 'any': also agent keys, which carry their agent's own traffic (the model gateway).
 */
function presentedKey(request: Request): string | undefined {
  const fromBearer = bearer(request);
  if (fromBearer && hasPrefix(fromBearer, 'ask')) return fromBearer;
  const apiKey = request.headers['x-api-key'];
  if (typeof apiKey === 'string' && hasPrefix(apiKey.trim(), 'ask')) return apiKey.trim();
  return undefined;
}

export function registerWorkspaceKey(server: Server, deps: { keys: KeyResolver }): void {
  server.auth.scheme(WORKSPACE_KEY, () => ({
    async authenticate(request, h) {
      const value = presentedKey(request);
      if (!value)
        throw new AppError('unauthenticated', {
          message: `This route takes ${expectedCredential[WORKSPACE_KEY]}; none was sent.`,
        });
      const resolved = await deps.keys.resolve(value);
      if (!resolved) throw new AppError('invalid_api_key');
      const { record } = resolved;
      const needed = svcOptions(request.route.settings).keyScope ?? 'any-workspace';
      if (needed === 'admin' && record.scope !== 'admin') {
        throw new AppError('forbidden', {
          message: 'This route needs a workspace key of scope admin.',
          fix: 'Use an admin workspace key (svc keys create --scope admin).',
        });
      }
      if (record.scope === 'agent') {
        if (needed !== 'any') {
          throw new AppError('forbidden', {
            message: "An agent key carries only its agent's own traffic; this route needs a workspace key.",
            fix: 'Use a workspace key of scope inference or admin.',
          });
        }
        if (!resolved.agent || resolved.agent.removedAt)
          throw new AppError('agent_not_found', { details: { agentId: record.agentId! } });
      }
      return h.authenticated({
        credentials: credentials({ kind: 'workspace-key', workspaceId: record.workspaceId, key: record }),
      });
    },
  }));
  server.auth.strategy(WORKSPACE_KEY, WORKSPACE_KEY);
}
