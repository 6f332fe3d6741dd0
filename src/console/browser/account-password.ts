import { $, failureOf, later, setBusy, showNotice } from './helpers.js';
import { say } from './sections-shared.js';
import type { AccountPage } from './account-page.js';

/**
 * The account page's password form: checked in the page first (the current one typed, the new
 * one at least 12 characters and typed twice alike), then changed; the other sessions the change
 * signed out are counted, and the sessions' list reloaded.
 */
export function wirePasswordForm(page: AccountPage): void {
  const passwordForm = $<HTMLFormElement>('#account-password-form');
  passwordForm.addEventListener(
    'submit',
    later(async function (event) {
      event.preventDefault();
      const error = $('#account-password-error');
      const current = $<HTMLInputElement>('#account-current-password');
      const next = $<HTMLInputElement>('#account-new-password');
      const again = $<HTMLInputElement>('#account-confirm-password');
      if (!current.value) return showNotice(error, 'Type your current password.');
      if (next.value.length < 12) return showNotice(error, 'The new password must be at least 12 characters long.');
      if (next.value !== again.value) return showNotice(error, 'The two new passwords differ.');
      const save = $<HTMLButtonElement>('#account-password-save');
      showNotice(error, '');
      setBusy([save], true);
      try {
        const answer = await page.call('PUT', '/api/me/password', {
          currentPassword: current.value,
          newPassword: next.value,
        });
        if (!answer) return;
        current.value = next.value = again.value = '';
        const others = Math.max(0, (answer.sessionsEnded ?? 1) - 1);
        say(
          'Password changed.' +
            (others ? ' ' + others + ' other session' + (others === 1 ? '' : 's') + ' signed out.' : ''),
        );
        await page.loadSessions();
      } catch (caught) {
        showNotice(error, failureOf(caught).message);
      } finally {
        setBusy([save], false);
      }
    }),
  );
}
