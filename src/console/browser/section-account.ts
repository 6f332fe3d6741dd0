import { $ } from './helpers.js';
import { accountCall, type AccountPage, type AccountState } from './account-page.js';
import { wirePasswordForm } from './account-password.js';
import { keepSessionsFresh, loadSessions } from './account-sessions.js';
import { renderTotp } from './account-two-factor.js';
/**
 * Your account (/console/account) in the browser: the password changed (the API's field
 * messages as plain sentences: account-password.ts), two-factor sign-in turned on and off with
 * its recovery codes (account-two-factor.ts), and the person's sessions, each ended alone or
 * every other at once (account-sessions.ts).
 */
export function section_account() {
  const root = $('#account-section');
  const state: AccountState = {
    pending: 0,
    totp: root.dataset.totp === 'true',
    enrolment: null,
    codes: null,
    error: '',
  };
  const page: AccountPage = {
    state,
    call: accountCall(state),
    loadSessions: function () {
      return loadSessions(page);
    },
  };
  wirePasswordForm(page);
  renderTotp(page);
  keepSessionsFresh(page);
}
