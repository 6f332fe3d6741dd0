import { body, failureOf, $, api, showNotice, later, setBusy, type Data } from './helpers.js';
import { plainMessage } from './plain-errors.js';
/**
 * /login in the browser: email and password to POST /api/session; on 401 totp_required the code
 * field appears and the next try sends it; a one-time password is replaced (PUT /api/me/password)
 * before the person goes on to /console.
 */
// ---- sign-in ------------------------------------------------------------------------------

export function loginPage() {
  const form = $('#signin');
  const error = $('#signin-error');
  const totpRow = $('#totp-row');
  const totp = $<HTMLInputElement>('#totp');
  const password = $<HTMLInputElement>('#password');
  const submit = $<HTMLButtonElement>('button[type=submit]', form);

  form.addEventListener(
    'submit',
    later(async function (event) {
      event.preventDefault();
      const email = $<HTMLInputElement>('#email').value.trim();
      if (!email || !password.value) {
        showNotice(error, 'Enter your email and password.');
        return;
      }
      const payload: { email: string; password: string; totp?: string } = { email: email, password: password.value };
      const code = totp.value.replace(/\s+/g, '');
      if (!totpRow.hidden && code) payload.totp = code;
      showNotice(error, '');
      setBusy([submit], true);
      try {
        const session = await api('POST', '/api/session', payload);
        if (session && session.user && session.user.mustChangePassword) {
          choosePassword(password.value);
          return;
        }
        window.location.assign(body.dataset.next || '/console');
      } catch (caught) {
        const err = failureOf(caught);
        if (err.type === 'totp_required') {
          const first = totpRow.hidden;
          totpRow.hidden = false;
          totp.required = true;
          totp.focus();
          showNotice(error, err.message, first ? 'info' : 'error');
        } else {
          showNotice(error, err.message);
        }
      } finally {
        setBusy([submit], false);
      }
    }),
  );
}

export function choosePassword(current: Data) {
  $('#signin').hidden = true;
  $<HTMLInputElement>('#new-password-username').value = $<HTMLInputElement>('#email').value.trim();
  const form = $('#new-password');
  form.hidden = false;
  $('#next-password').focus();
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    void changePassword(form, current, $('#new-password-error'));
  });
}

export async function changePassword(form: Data, current: Data, error: Data) {
  const next = $<HTMLInputElement>('#next-password').value;
  if (next !== $<HTMLInputElement>('#confirm-password').value) {
    showNotice(error, 'The two new passwords differ.');
    return;
  }
  const submit = $<HTMLButtonElement>('button[type=submit]', form);
  showNotice(error, '');
  setBusy([submit], true);
  try {
    await api('PUT', '/api/me/password', { currentPassword: current, newPassword: next });
    window.location.assign('/console');
  } catch (caught) {
    const err = failureOf(caught);
    showNotice(error, plainMessage(err.message));
    setBusy([submit], false);
  }
}
