import type { Plugin, Request } from '@hapi/hapi';
import { machineCaller, SERVICE_TOKEN, type Caller } from '../http/auth/callers.js';
import { rolesForScope } from '../oauth/device/person-access.js';
import { applyBodySchema, type ApplyInput, type Setup } from './service.js';

/**
 * The workspace as a file (docs/setup-as-code.md), for `svc apply` and `svc export`:
 * - `GET /v1/admin/setup` (scope `setup:read`): `{ document }`, the workspace's file as JSON.
 * - `POST /v1/admin/setup` (scope `setup:write`) with `{ document, secrets?, dryRun?, prune? }`:
 *   the plan, and unless a dry run, applied: `200`
 *   `{ dryRun, prune, changed, summary, changes: [{ section, name, action, fields }], secrets }`.
 * - `POST /v1/admin/setup/plan` (scope `setup:read`), the same body: the plan, never applied.
 *   A bad document is `400 invalid_workspace_file` or `400 secret_in_file`, listing every field;
 *   a secret's variable missing from `secrets` is `400 secret_unset`.
 * Each resource changes through its own service, so its ledger records are the ones the console's
 * and the other machine routes write, under `token:<name>` (or `user:<id>` for a person signed in
 * with `svc login`).
 */
export const setupRoutes: Plugin<{ setup: Setup }> = {
  name: 'svc-setup',
  register(server, { setup }) {
    server.route([
      {
        method: 'GET',
        path: '/v1/admin/setup',
        options: { auth: SERVICE_TOKEN, plugins: { svc: { tokenScope: 'setup:read' } } },
        async handler(request) {
          return { document: await setup.export(machineCaller(request).workspaceId) };
        },
      },
      {
        // The plan only: what applying the document would change; never writes (a check in CI).
        method: 'POST',
        path: '/v1/admin/setup/plan',
        options: {
          auth: SERVICE_TOKEN,
          plugins: { svc: { tokenScope: 'setup:read', maxBodyMembers: 200_000 } },
          validate: { payload: applyBodySchema },
        },
        async handler(request) {
          const c = machineCaller(request);
          const body = request.payload as ApplyInput;
          // Secrets are compared only for a caller who may apply the file anyway (setup:write).
          return setup.apply(
            c.workspaceId,
            { ...body, dryRun: true },
            { actor: c.actor, tokenId: c.tokenId },
            { compareSecrets: mayApply(request) },
          );
        },
      },
      {
        method: 'POST',
        path: '/v1/admin/setup',
        options: {
          auth: SERVICE_TOKEN,
          plugins: { svc: { tokenScope: 'setup:write', maxBodyMembers: 200_000 } },
          validate: { payload: applyBodySchema },
        },
        async handler(request) {
          // A service token, or a person signed in with svc login (the ledger names them).
          const c = machineCaller(request);
          const result = await setup.apply(c.workspaceId, request.payload as ApplyInput, {
            actor: c.actor,
            tokenId: c.tokenId,
          });
          // Connected MCP clients hear that the workspace's tools changed, as after the MCP routes.
          const mcpChanged = result.changes.some(
            (x) => x.section === 'mcpServers' && x.action !== 'unchanged' && x.action !== 'unmanaged',
          );
          const changed = (request.server.plugins as { 'svc-mcp'?: { changed?: (w: string) => Promise<void> } })[
            'svc-mcp'
          ]?.changed;
          if (mcpChanged && !result.dryRun && changed) await changed(c.workspaceId);
          return result;
        },
      },
    ]);
  },
};

/** Whether the caller may apply a file (setup:write): a token with the scope, or a person whose role grants it. */
function mayApply(request: Request): boolean {
  const found = (request.auth.credentials as unknown as { caller?: Caller }).caller;
  if (found?.kind === 'service-token') return found.token.scopes.includes('setup:write');
  if (found?.kind === 'person') return rolesForScope('setup:write')?.includes(found.role) ?? false;
  return false;
}
