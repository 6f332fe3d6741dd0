import Joi from 'joi';
import type { Plugin, Request, ResponseObject, ResponseToolkit } from '@hapi/hapi';
import { caller } from '../http/auth/callers.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { PeopleService } from '../people/index.js';
import { APP_SCRIPT } from './generated/app-script.js';
import { APP_STYLE } from './app-style.js';
import { AppError } from '../errors/app-error.js';
import { CONTENT_SECURITY_POLICY, SCRIPT_PATH, STYLE_PATH, consolePage, loginPage, sectionShown } from './pages.js';
import { findSection, SECTIONS, type ConsoleSection } from './sections.js';
import { consoleView, type ConsoleView } from './view.js';

/** At most this many of a workspace's people are named on a page (pages of 200). */
const NAMED_PEOPLE = 5000;

/** The names of the workspace's people, as the members list gives them. */
async function peopleNames(people: PeopleService, wid: string): Promise<ConsoleView['people']> {
  const out: ConsoleView['people'] = [];
  let after: string | undefined;
  while (out.length < NAMED_PEOPLE) {
    const page = await people.listMembers(wid, { limit: 200, ...(after ? { after } : {}) });
    out.push(...page.data.map((m) => ({ id: m.id, name: m.name || m.email })));
    if (!page.next) break;
    after = page.next;
  }
  return out;
}

const workspaceQuery = Joi.object({ w: Joi.string().pattern(/^ws_[0-9A-Za-z]{22}$/) });

/**
 * The web console (docs/console.md; server-rendered pages, same origin): /login, /console (the
 * overview), /console/{section} (sections.ts), and
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
    const overview = SECTIONS[0]!;
    /** A section's page; 403 (the page, saying so) when the person's role does not open it. */
    const sectionPage = async (
      request: Request,
      h: ResponseToolkit,
      section: ConsoleSection,
    ): Promise<ResponseObject> => {
      if (!request.auth.isAuthenticated) return h.redirect('/login');
      const { w } = request.query as { w?: string };
      const view = consoleView(await people.me(caller(request, 'session').user.id), w);
      if (section.names && view.current && sectionShown(view, section))
        view.people = await peopleNames(people, view.current.id);
      const response = page(h, consolePage(view, section));
      return view.current && !view.user.mustChangePassword && !section.visible(view) ? response.code(403) : response;
    };
    // 'try': without a session the page sends the person to /login instead of a 401.
    const pageOptions = {
      auth: { strategies: sessionStrategies(production), mode: 'try' as const },
    };

    server.route([
      {
        // ?next= brings a person back where sign-in interrupted them: only the OAuth consent and
        // the command line's sign-in page (/device: paths of this origin), never another site.
        method: 'GET',
        path: '/login',
        options: { auth: false, validate: { query: Joi.object({ next: Joi.string().max(4096) }) } },
        handler: (request, h) => {
          const { next } = request.query as { next?: string };
          const back = next && (next.startsWith('/oauth/authorize?') || /^\/device(\?|$)/.test(next));
          return page(h, back ? loginPage(next) : login);
        },
      },
      {
        method: 'GET',
        path: '/console',
        options: { ...pageOptions, validate: { query: workspaceQuery } },
        handler: (request, h) => sectionPage(request, h, overview),
      },
      {
        method: 'GET',
        path: '/console/{section}',
        options: {
          ...pageOptions,
          validate: {
            params: Joi.object({
              section: Joi.string()
                .max(64)
                .pattern(/^[a-z][a-z-]*$/),
            }),
            query: workspaceQuery,
          },
        },
        handler(request, h) {
          if (!request.auth.isAuthenticated) return h.redirect('/login');
          const { section: id } = request.params as { section: string };
          const section = findSection(id);
          if (!section) {
            throw new AppError('not_found', {
              message: `The console has no section "${id}".`,
              fix: `Open one of: ${SECTIONS.map((s) => s.id).join(', ')}.`,
            });
          }
          // The overview has one address, /console.
          if (section === overview) {
            const { w } = request.query as { w?: string };
            return h.redirect(w ? `/console?w=${encodeURIComponent(w)}` : '/console');
          }
          return sectionPage(request, h, section);
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
