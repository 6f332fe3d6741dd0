import Joi from 'joi';
import type { Plugin, ResponseObject, ResponseToolkit } from '@hapi/hapi';
import { caller } from '../http/auth/callers.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { PeopleService } from '../people/index.js';
import { APP_SCRIPT } from './script/index.js';
import { APP_STYLE } from './app-style.js';
import { CONTENT_SECURITY_POLICY, SCRIPT_PATH, STYLE_PATH, consolePage, loginPage } from './pages.js';
import { consoleView } from './view.js';

/**
 * The web console (API.md 2: "Web pages, server-rendered, same origin"): /login, /console, and
 * the page script and stylesheet it loads. Pages carry the strict Content-Security-Policy; the
 * front door adds X-Frame-Options: DENY, Referrer-Policy: no-referrer and nosniff to everything
 * outside /v1/. Every write the pages make goes through the API's console routes, with their
 * session, CSRF and permission checks; these routes only read.
 */
export const consoleRoutes: Plugin<{ people: PeopleService; production: boolean }> = {
  name: 'svc-console',
  register(server, { people, production }) {
    const login = loginPage();
    const page = (h: ResponseToolkit, html: string): ResponseObject =>
      h.response(html).type('text/html; charset=utf-8').header('content-security-policy', CONTENT_SECURITY_POLICY);

    server.route([
      {
        // ?next= brings a person back where sign-in interrupted them: only the OAuth consent
        // (a path of this origin), never another site.
        method: 'GET',
        path: '/login',
        options: { auth: false, validate: { query: Joi.object({ next: Joi.string().max(4096) }) } },
        handler: (request, h) => {
          const { next } = request.query as { next?: string };
          return page(h, next && next.startsWith('/oauth/authorize?') ? loginPage(next) : login);
        },
      },
      {
        method: 'GET',
        path: '/console',
        options: {
          // 'try': without a session the page sends the person to /login instead of a 401.
          auth: { strategies: sessionStrategies(production), mode: 'try' },
          validate: { query: Joi.object({ w: Joi.string().pattern(/^ws_[0-9A-Za-z]{22}$/) }) },
        },
        handler(request, h) {
          if (!request.auth.isAuthenticated) return h.redirect('/login');
          const { w } = request.query as { w?: string };
          return page(h, consolePage(consoleView(people.me(caller(request, 'session').user.id), w)));
        },
      },
      {
        method: 'GET',
        path: SCRIPT_PATH,
        options: { auth: false },
        handler: (_request, h) => h.response(APP_SCRIPT).type('text/javascript; charset=utf-8'),
      },
      {
        method: 'GET',
        path: STYLE_PATH,
        options: { auth: false },
        handler: (_request, h) => h.response(APP_STYLE).type('text/css; charset=utf-8'),
      },
    ]);
  },
};
