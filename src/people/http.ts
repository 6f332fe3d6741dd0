import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import type { Guards } from '../http/guards.js';
import { caller } from '../http/auth/callers.js';
import { sessionCookieName, sessionStrategies } from '../http/auth/session.js';
import { MIN_PASSWORD_LENGTH, type PeopleService } from './service.js';

/** Sign-in and the signed-in person (API.md section 2). */
export const peopleRoutes: Plugin<{ people: PeopleService; production: boolean; guards: Guards }> = {
  name: 'svc-people',
  register(server, { people, production, guards }) {
    const cookieName = sessionCookieName(production);
    const session = { strategies: sessionStrategies(production) };
    server.route([
      {
        method: 'POST', path: '/api/session',
        options: {
          auth: false,
          ext: { onPreAuth: guards.publicRoute('signIn', { consoleWrite: true }) },
          validate: {
            payload: Joi.object({
              email: Joi.string().trim().max(320).required(),
              password: Joi.string().max(1024).required(),
              totp: Joi.string().pattern(/^\d{6,8}$/),
            }),
          },
        },
        async handler(request, h) {
          const { email, password } = request.payload as { email: string; password: string };
          guards.accountAttempt(email);
          const result = await people.signIn(email, password);
          h.state(cookieName, { sid: result.secret });
          return { user: result.user, workspaces: result.workspaces };
        },
      },
      {
        method: 'DELETE', path: '/api/session', options: { auth: session, ext: { onPreAuth: guards.consoleWrite } },
        async handler(request, h) {
          await people.signOut(caller(request, 'session').secret);
          h.unstate(cookieName);
          return {};
        },
      },
      {
        method: 'PUT', path: '/api/me/password',
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
        method: 'GET', path: '/api/me', options: { auth: session },
        handler: (request) => people.me(caller(request, 'session').user.id),
      },
    ]);
  },
};
