import { keepFresh } from './console-page.js';
import { $, api, el, failureOf, replace, setBusy, showNotice, time, type Data } from './helpers.js';
import { confirmButton, say, sessionEnded, stackTable, updated } from './sections-shared.js';
import type { AccountPage } from './account-page.js';

/** The account page's sessions: each one listed, each other one signed out alone, or all of them at once. */
export async function loadSessions(page: AccountPage): Promise<void> {
  page.state.pending += 1;
  try {
    const answer = await api('GET', '/api/me/sessions');
    renderSessions(page, answer.sessions || []);
    updated();
  } catch (caught) {
    const err = failureOf(caught);
    if (sessionEnded(err)) return;
    replace($('#account-sessions-body'), el('p', { class: 'notice notice-error', role: 'alert', text: err.message }));
  } finally {
    page.state.pending -= 1;
  }
}

async function endSessions(page: AccountPage, path: string, buttons: HTMLButtonElement[]) {
  setBusy(buttons, true);
  try {
    const answer = await page.call('DELETE', path, {});
    if (answer) {
      const n = answer.sessionsEnded || 0;
      say(n === 1 ? 'One session signed out.' : n + ' sessions signed out.');
    }
  } catch (caught) {
    showNotice($('#error'), failureOf(caught).message);
  }
  await loadSessions(page);
}

function renderSessions(page: AccountPage, list: Data[]) {
  $('#account-sessions-count').textContent = list.length ? String(list.length) : '';
  const others = list.filter(function (s) {
    return !s.current;
  });
  const rows = list.map(function (s) {
    return el(
      'tr',
      { data: { session: s.id } },
      el(
        'td',
        { 'data-label': 'Session' },
        el('span', { class: 'mono', text: s.id }),
        s.current ? [' ', el('span', { class: 'badge badge-ok', text: 'This session' })] : null,
      ),
      el('td', { 'data-label': 'Signed in' }, time(s.createdAt)),
      el('td', { 'data-label': 'Ends' }, time(s.expiresAt)),
      el(
        'td',
        { class: 'actions', 'data-label': 'Actions' },
        s.current
          ? null
          : confirmButton('Sign out…', 'Sign it out', function (buttons) {
              void endSessions(page, '/api/me/sessions/' + encodeURIComponent(s.id), buttons);
            }),
      ),
    );
  });
  const everywhere = others.length
    ? confirmButton('Sign out everywhere else…', 'Sign them out', function (buttons) {
        void endSessions(page, '/api/me/sessions', buttons);
      })
    : el('p', { class: 'hint', text: 'You are signed in nowhere else.' });
  replace($('#account-sessions-body'), stackTable(['Session', 'Signed in', 'Ends', null], rows), everywhere);
}

/** Keeps the sessions fresh, except while a call is under way or two-factor is being set up. */
export function keepSessionsFresh(page: AccountPage): void {
  keepFresh(
    function () {
      return loadSessions(page);
    },
    function () {
      return page.state.pending > 0 || page.state.enrolment !== null || page.state.codes !== null;
    },
  );
}
