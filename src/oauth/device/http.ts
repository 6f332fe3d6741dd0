import Joi from 'joi';
import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import { AppError } from '../../errors/app-error.js';
import { caller, SERVICE_TOKEN, type SessionUser } from '../../http/auth/callers.js';
import { sessionStrategies } from '../../http/auth/session.js';
import { clientAddress } from '../../http/client-address.js';
import type { Guards } from '../../http/guards.js';
import type { PeopleService } from '../../people/index.js';
import { PUBLIC_CORS } from '../cors.js';
import type { DeviceGrant } from './service.js';
import { DEVICE_PAGE_POLICY, deviceCodePage, deviceConfirmPage, deviceDonePage } from './page.js';

/**
 * `svc login`'s routes (service.ts): the device authorization endpoint (RFC 8628 3.1), the
 * verification page a signed-in person approves the code on (/device, RFC 8628 3.3), and
 * GET /v1/admin/whoami, which tells the command line who its credential is.
 * Rules:
 * - The device authorization endpoint answers like the token endpoint: form-encoded, errors as
 *   `{ error, error_description }`, no-store, any origin without credentials.
 * - /device without a session sends the person to sign in and back (with the code they were
 *   given); with one, it shows the code's origin and time and the person's workspaces.
 * - The decision is a form post of this origin (Origin checked, the session cookie SameSite=Lax);
 *   approving needs a role in the chosen workspace that may read it (a one-time password must be
 *   changed first), and is recorded in the ledger as the person's.
 */
export const deviceRoutes: Plugin<{
  device: DeviceGrant;
  people: PeopleService;
  production: boolean;
  guards: Guards;
  trustedProxies: readonly string[];
}> = {
  name: 'svc-oauth-device',
  register(server, { device, people, production, guards, trustedProxies }) {
    const session = { strategies: sessionStrategies(production) };
    const form = Joi.object().pattern(/./, Joi.string().allow('')).unknown(true);
    const html = (h: ResponseToolkit, body: string, code = 200) =>
      h
        .response(body)
        .code(code)
        .type('text/html; charset=utf-8')
        .header('content-security-policy', DEVICE_PAGE_POLICY)
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'same-origin');
    /** The code form, or the confirmation for a waiting code, for the signed-in person. */
    const show = async (request: Request, h: ResponseToolkit, typed: string | undefined) => {
      const user = caller(request, 'session').user;
      if (!typed) return html(h, deviceCodePage({ person: user.email }));
      const pending = await device.pending(typed);
      if ('problem' in pending)
        return html(h, deviceCodePage({ person: user.email, problem: pending.problem, typed }), 400);
      const { workspaces } = await people.me(user.id);
      return html(h, deviceConfirmPage({ person: user.email, ...pending, workspaces }));
    };

    /**
     * The person's decision for the workspace they chose (their first by default), or the refusal
     * to show on the page (a used or expired code, a one-time password to change first).
     */
    const decide = async (
      user: SessionUser,
      body: { user_code: string; workspace?: string; decision: 'approve' | 'deny' },
    ): Promise<{ workspaceName: string } | { problem: string; status: number }> => {
      const { workspaces } = await people.me(user.id);
      const chosen = workspaces.find((w) => w.id === body.workspace) ?? workspaces[0];
      try {
        if (!chosen) throw new AppError('forbidden', { message: 'You belong to no workspace.' });
        // The same check as the console's: a member of the workspace, with their own password.
        await people.authorize(chosen.id, user, 'workspace.read');
        await device.decide(body.user_code, user.id, chosen.id, body.decision);
        return { workspaceName: chosen.name };
      } catch (err) {
        if (err instanceof AppError && err.status < 500)
          return {
            problem: err.type === 'invalid_request' ? err.message : `${err.message} ${err.fix}`,
            status: err.status,
          };
        throw err;
      }
    };

    server.route([
      {
        method: 'POST',
        path: '/oauth/device_authorization',
        options: {
          auth: false,
          cors: PUBLIC_CORS,
          ext: { onPreAuth: guards.publicRoute('public') },
          plugins: { svc: { errorEnvelope: 'oauth' as const } },
          validate: { payload: form },
        },
        async handler(request, h) {
          const answer = await device.authorize(
            (request.payload ?? {}) as Record<string, string | undefined>,
            clientAddress(request, trustedProxies),
          );
          return h.response(answer).header('cache-control', 'no-store').header('pragma', 'no-cache');
        },
      },
      {
        method: 'GET',
        path: '/device',
        options: {
          auth: { ...session, mode: 'try' },
          validate: { query: Joi.object({ user_code: Joi.string().allow('').max(64) }) },
        },
        async handler(request, h) {
          const { user_code: typed } = request.query as { user_code?: string };
          if (!request.auth.isAuthenticated)
            return h.redirect(`/login?next=${encodeURIComponent(request.url.pathname + request.url.search)}`);
          return show(request, h, typed);
        },
      },
      {
        method: 'POST',
        path: '/device',
        options: {
          auth: session,
          // A form post of this deployment only (browsers send Origin on form posts; without
          // baseUrl, the origin the page was served from), and a per-address budget for typed codes.
          ext: { onPreAuth: guards.publicRoute('public', { formPost: true }) },
          validate: {
            payload: Joi.object({
              user_code: Joi.string().max(64).required(),
              workspace: Joi.string().max(64),
              decision: Joi.string().valid('approve', 'deny').required(),
            }),
          },
        },
        async handler(request, h) {
          const user = caller(request, 'session').user;
          const body = request.payload as { user_code: string; workspace?: string; decision: 'approve' | 'deny' };
          const outcome = await decide(user, body);
          if ('problem' in outcome)
            return html(
              h,
              deviceCodePage({ person: user.email, problem: outcome.problem, typed: body.user_code }),
              outcome.status,
            );
          return html(h, deviceDonePage(body.decision, outcome.workspaceName));
        },
      },
      {
        method: 'GET',
        path: '/v1/admin/whoami',
        options: { auth: SERVICE_TOKEN },
        async handler(request) {
          const found = (request.auth.credentials as unknown as { caller?: { kind: string } }).caller;
          if (found?.kind === 'person') {
            const c = caller(request, 'person');
            return {
              kind: 'person',
              user: c.user,
              workspace: { id: c.workspaceId, name: await device.workspaceName(c.workspaceId) },
              role: c.role,
              loginId: c.loginId,
              expiresAt: c.expiresAt,
            };
          }
          const c = caller(request, 'service-token');
          return {
            kind: 'service-token',
            workspace: { id: c.workspaceId, name: await device.workspaceName(c.workspaceId) },
            token: { id: c.token.id, name: c.token.name, scopes: c.token.scopes, expiresAt: c.token.expiresAt },
          };
        },
      },
    ]);
  },
};
