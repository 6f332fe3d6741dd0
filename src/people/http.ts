import Joi from 'joi';
import type { Plugin, ServerRoute } from '@hapi/hapi';
import type { Guards } from '../http/guards.js';
import { caller } from '../http/auth/callers.js';
import { member } from '../http/auth/permission.js';
import { sessionCookieName, sessionStrategies } from '../http/auth/session.js';
import type { Permission } from './permissions.js';
import type { Role } from './records.js';
import { MIN_PASSWORD_LENGTH, type PeopleService } from './service.js';
import { page, pageOf, wid } from '../http/params.js';

declare module '../http/auth/permission.js' {
  // The one table of console permissions is what a route may declare (`options.app.permission`).
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- declaration merging
  interface RoutePermissions extends Record<Permission, true> {}
}

const uid = Joi.string().max(64).required();
const role = Joi.string().valid('owner', 'admin', 'member', 'analyst', 'auditor');
const name = Joi.string().trim().min(1).max(200);
const code = Joi.string()
  .pattern(/^\d{6}$/)
  .required()
  .messages({ 'string.pattern.base': '"code" must be the 6 digits your authenticator shows' });
/** A current code, or one of the recovery codes (turning two-factor off when the authenticator is lost). */
const codeOrRecovery = Joi.string()
  .trim()
  .pattern(/^(\d{6}|[A-Za-z2-7]{5}[- ]?[A-Za-z2-7]{5})$/)
  .required()
  .messages({
    'string.pattern.base': '"code" must be the 6 digits your authenticator shows, or one of your recovery codes',
  });

/** What the people routes are given. */
interface PeopleRouteDeps {
  people: PeopleService;
  guards: Guards;
  /** The session cookie's name (`__Host-sid` in production). */
  cookieName: string;
  session: { strategies: string[] };
}

/** Sign-in and out, the password, the signed-in person and their workspaces. */
function signInRoutes({ people, guards, cookieName, session }: PeopleRouteDeps): ServerRoute[] {
  return [
    {
      method: 'POST',
      path: '/api/session',
      options: {
        auth: false,
        ext: { onPreAuth: guards.publicRoute('signIn', { consoleWrite: true }) },
        validate: {
          payload: Joi.object({
            email: Joi.string().trim().max(320).required(),
            password: Joi.string().max(1024).required(),
            // A six-to-eight digit code, or a recovery code (`abcde-fghij`) in its place.
            totp: Joi.string()
              .trim()
              .pattern(/^(\d{6,8}|[A-Za-z2-7]{5}[- ]?[A-Za-z2-7]{5})$/),
          }),
        },
      },
      async handler(request, h) {
        const { email, password, totp } = request.payload as { email: string; password: string; totp?: string };
        // Every attempt counts against the account, a right password with a wrong code too.
        await guards.accountAttempt(email);
        const result = await people.signIn(email, password, totp);
        h.state(cookieName, { sid: result.secret });
        return {
          user: result.user,
          workspaces: result.workspaces,
          ...(result.recoveryCodesLeft !== undefined ? { recoveryCodesLeft: result.recoveryCodesLeft } : {}),
        };
      },
    },
    {
      method: 'DELETE',
      path: '/api/session',
      options: { auth: session, ext: { onPreAuth: guards.consoleWrite } },
      async handler(request, h) {
        await people.signOut(caller(request, 'session').secret);
        h.unstate(cookieName);
        return {};
      },
    },
    {
      method: 'PUT',
      path: '/api/me/password',
      options: {
        auth: session,
        // It checks a password, so it is limited per address like sign-in.
        ext: { onPreAuth: guards.publicRoute('signIn', { consoleWrite: true }) },
        validate: {
          payload: Joi.object({
            currentPassword: Joi.string().max(1024).required(),
            newPassword: Joi.string().min(MIN_PASSWORD_LENGTH).max(1024).required(),
          }),
        },
      },
      async handler(request, h) {
        const c = caller(request, 'session');
        const { currentPassword, newPassword } = request.payload as { currentPassword: string; newPassword: string };
        const { sessionsEnded, secret } = await people.changePassword(c.user.id, currentPassword, newPassword);
        h.state(cookieName, { sid: secret });
        return { sessionsEnded };
      },
    },
    {
      method: 'GET',
      path: '/api/me',
      options: { auth: session },
      handler: (request) => people.me(caller(request, 'session').user.id),
    },
    {
      // The caller's workspaces and role in each (as GET /api/me lists them).
      method: 'GET',
      path: '/api/workspaces',
      options: { auth: session },
      handler: async (request) => ({
        data: await people.workspacesOf(caller(request, 'session').user.id),
        next: null,
      }),
    },
    {
      // Another workspace: an owner of one creates it, and is its owner (people/service.ts).
      method: 'POST',
      path: '/api/workspaces',
      options: {
        auth: session,
        ext: { onPreAuth: guards.consoleWrite },
        validate: { payload: Joi.object({ name: Joi.string().trim().min(1).max(200).required() }) },
      },
      async handler(request, h) {
        const { name } = request.payload as { name: string };
        return h.response(await people.createAnotherWorkspace(caller(request, 'session').user, name)).code(201);
      },
    },
  ];
}

/**
 * Two-factor (on, confirmed, off, new recovery codes) and the person's own sessions. A route that
 * takes the person's current code is limited like sign-in, per address and account.
 */
function twoFactorAndSessionRoutes({ people, guards, session }: PeopleRouteDeps): ServerRoute[] {
  const totpCodeRoute = (
    method: 'POST' | 'DELETE',
    path: string,
    act: (userId: string, totp: string) => Promise<unknown>,
    schema = code,
  ): ServerRoute => ({
    method,
    path,
    options: {
      auth: session,
      ext: { onPreAuth: guards.publicRoute('signIn', { consoleWrite: true }) },
      validate: { payload: Joi.object({ code: schema }) },
    },
    async handler(request) {
      const { user } = caller(request, 'session');
      await guards.accountAttempt(user.email);
      return act(user.id, (request.payload as { code: string }).code);
    },
  });
  return [
    {
      method: 'POST',
      path: '/api/me/totp',
      options: { auth: session, ext: { onPreAuth: guards.consoleWrite } },
      handler: (request) => people.startTotp(caller(request, 'session').user.id),
    },
    totpCodeRoute('POST', '/api/me/totp/confirm', (userId, totp) => people.confirmTotp(userId, totp)),
    totpCodeRoute('DELETE', '/api/me/totp', (userId, totp) => people.disableTotp(userId, totp), codeOrRecovery),
    totpCodeRoute('POST', '/api/me/totp/recovery-codes', (userId, totp) => people.replaceRecoveryCodes(userId, totp)),
    {
      method: 'GET',
      path: '/api/me/sessions',
      options: { auth: session },
      handler(request) {
        const c = caller(request, 'session');
        return people.sessionsOf(c.user.id, c.secret);
      },
    },
    {
      method: 'DELETE',
      path: '/api/me/sessions',
      options: { auth: session, ext: { onPreAuth: guards.consoleWrite } },
      handler(request) {
        const c = caller(request, 'session');
        return people.endSessions(c.user.id, c.secret);
      },
    },
    {
      method: 'DELETE',
      path: '/api/me/sessions/{sessionId}',
      options: {
        auth: session,
        ext: { onPreAuth: guards.consoleWrite },
        validate: {
          params: Joi.object({
            sessionId: Joi.string()
              .pattern(/^ses_[\w-]{16}$/)
              .required(),
          }),
        },
      },
      handler(request) {
        const c = caller(request, 'session');
        return people.endSessions(c.user.id, c.secret, (request.params as { sessionId: string }).sessionId);
      },
    },
  ];
}

/** The members of a workspace: listed, added, changed, unlocked and removed by those the permission admits there. */
function memberRoutes({ people, guards, session }: PeopleRouteDeps): ServerRoute[] {
  /** A change to one member of a workspace, by a signed-in person the permission admits there. */
  const memberWrite = (
    method: 'PATCH' | 'DELETE',
    path: string,
    permission: Permission,
    act: (w: string, u: string, by: { userId: string }, payload: unknown) => Promise<unknown>,
    payload?: Joi.ObjectSchema,
  ): ServerRoute => ({
    method,
    path,
    options: {
      auth: session,
      app: { permission },
      ext: { onPreAuth: guards.consoleWrite },
      validate: { params: Joi.object({ wid, uid }), ...(payload ? { payload } : {}) },
    },
    handler(request) {
      const { wid: w, user } = member(request);
      return act(w, (request.params as { uid: string }).uid, { userId: user.id }, request.payload);
    },
  });
  return [
    {
      method: 'GET',
      path: '/api/w/{wid}/members',
      options: {
        auth: session,
        app: { permission: 'members.manage' },
        validate: { params: Joi.object({ wid }), query: page },
      },
      handler: (request) => people.listMembers(member(request).wid, pageOf(request.query)),
    },
    {
      method: 'POST',
      path: '/api/w/{wid}/members',
      options: {
        auth: session,
        app: { permission: 'members.manage' },
        ext: { onPreAuth: guards.consoleWrite },
        validate: {
          params: Joi.object({ wid }),
          payload: Joi.object({
            email: Joi.string().trim().email({ tlds: false, minDomainSegments: 1 }).max(320).required(),
            name: name.required(),
            role: role.required(),
            password: Joi.string().min(MIN_PASSWORD_LENGTH).max(1024),
          }),
        },
      },
      async handler(request, h) {
        const { wid: w, user } = member(request);
        const input = request.payload as { email: string; name: string; role: Role; password?: string };
        return h.response(await people.addMember({ workspaceId: w, ...input }, { userId: user.id })).code(201);
      },
    },
    memberWrite(
      'PATCH',
      '/api/w/{wid}/members/{uid}',
      'members.manage',
      (w, u, by, payload) => people.updateMember(w, u, payload as { role?: Role; name?: string }, by),
      Joi.object({ role, name }).or('role', 'name'),
    ),
    // An owner lifts a member's lockout (people/lockouts.ts); recorded in this workspace.
    memberWrite('DELETE', '/api/w/{wid}/members/{uid}/lockout', 'members.unlock', (w, u, by) =>
      people.liftLockout(w, u, by),
    ),
    memberWrite('DELETE', '/api/w/{wid}/members/{uid}', 'members.manage', async (w, u, by) => {
      await people.removeMember(w, u, by);
      return {};
    }),
  ];
}

/**
 * Sign-in, the signed-in person and their two-factor, and the members of a workspace
 * (docs/console.md#members-and-two-factor). Routes that check a secret (password, code) are limited per address and
 * per account like sign-in.
 */
export const peopleRoutes: Plugin<{ people: PeopleService; production: boolean; guards: Guards }> = {
  name: 'svc-people',
  register(server, { people, production, guards }) {
    const deps: PeopleRouteDeps = {
      people,
      guards,
      cookieName: sessionCookieName(production),
      session: { strategies: sessionStrategies(production) },
    };
    server.route([...signInRoutes(deps), ...twoFactorAndSessionRoutes(deps), ...memberRoutes(deps)]);
  },
};
