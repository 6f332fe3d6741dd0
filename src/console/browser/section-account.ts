import { keepFresh } from './console-page.js';
import { $, el, replace, api, failureOf, showNotice, later, setBusy, time, type Data } from './helpers.js';
import { plainMessage } from './plain-errors.js';
import { say, sessionEnded, stackTable, updated, confirmButton } from './sections-shared.js';
/**
 * Your account (/console/account) in the browser: the password changed (the API's field
 * messages as plain sentences), two-factor sign-in turned on with a QR code (an SVG the server
 * draws, shown as a data: image, which the page's img-src allows) and the secret for typing in,
 * confirmed with a code, the ten recovery codes shown once with Copy and Download, replaced
 * with a current code, two-factor turned off; and the person's sessions, each ended alone or
 * every other at once.
 */
export function section_account() {
  const root = $('#account-section');
  const state: {
    pending: number;
    totp: boolean;
    enrolment: { secret: string; qrSvg: string } | null;
    codes: string[] | null;
    error: string;
  } = {
    pending: 0,
    totp: root.dataset.totp === 'true',
    enrolment: null,
    codes: null,
    error: '',
  };

  /** An API call of this page: its error as plain sentences; a 401 sends the person to sign in. */
  async function call(method: string, path: string, payload?: unknown): Promise<Data> {
    state.pending += 1;
    try {
      return await api(method, path, payload);
    } catch (caught) {
      const err = failureOf(caught);
      if (sessionEnded(err)) return null;
      throw new Error(plainMessage(err.message), { cause: caught });
    } finally {
      state.pending -= 1;
    }
  }

  // -- the password --

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
        const answer = await call('PUT', '/api/me/password', {
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
        await loadSessions();
      } catch (caught) {
        showNotice(error, failureOf(caught).message);
      } finally {
        setBusy([save], false);
      }
    }),
  );

  // -- two-factor --

  function codeInput(id: string, label: string): HTMLInputElement {
    return el('input', {
      id: id,
      type: 'text',
      inputmode: 'numeric',
      autocomplete: 'one-time-code',
      maxlength: '8',
      pattern: '[0-9]{6,8}',
      'aria-label': label,
      placeholder: '123456',
    });
  }

  function errorLine(): HTMLElement | null {
    return state.error ? el('p', { class: 'notice notice-error', role: 'alert', text: state.error }) : null;
  }

  function renderTotp() {
    const target = $('#account-totp-body');
    if (state.codes) return replace(target, errorLine(), recoveryCodes(state.codes));
    if (state.enrolment) return replace(target, errorLine(), enrolment(state.enrolment));
    if (!state.totp) {
      const start = el('button', {
        type: 'button',
        class: 'button button-primary',
        id: 'totp-start',
        text: 'Turn on two-factor sign-in',
      });
      start.addEventListener(
        'click',
        later(async function () {
          state.error = '';
          setBusy([start], true);
          try {
            const answer = await call('POST', '/api/me/totp', {});
            if (answer) state.enrolment = { secret: answer.secret, qrSvg: answer.qrSvg };
          } catch (caught) {
            state.error = failureOf(caught).message;
          }
          renderTotp();
        }),
      );
      return replace(
        target,
        el('p', { id: 'totp-state', text: 'Two-factor sign-in is off: your password alone signs you in.' }),
        errorLine(),
        start,
      );
    }
    // A current code; to turn two-factor off, a recovery code also does (the authenticator lost).
    const code = codeInput('totp-current-code', 'A current code from your authenticator app, or a recovery code');
    code.removeAttribute('pattern');
    code.setAttribute('maxlength', '12');
    code.setAttribute('inputmode', 'text');
    const renew = el('button', { type: 'button', class: 'button', id: 'totp-renew', text: 'Replace recovery codes' });
    const off = el('button', {
      type: 'button',
      class: 'button button-outline-danger',
      id: 'totp-off',
      text: 'Turn off two-factor',
    });
    async function withCode(method: string, path: string, done: (answer: Data) => void, recovery = false) {
      state.error = '';
      const value = code.value.replace(/\s+/g, '');
      const shaped = /^[0-9]{6,8}$/.test(value) || (recovery && /^[A-Za-z2-7]{5}-?[A-Za-z2-7]{5}$/.test(value));
      if (!shaped) {
        state.error = recovery
          ? 'Type the 6-digit code your authenticator app shows now, or one of your recovery codes.'
          : 'Type the 6-digit code your authenticator app shows now.';
        renderTotp();
        return;
      }
      setBusy([renew, off, code], true);
      try {
        const answer = await call(method, path, { code: value });
        if (answer) done(answer);
      } catch (caught) {
        state.error = failureOf(caught).message;
      }
      renderTotp();
    }
    renew.addEventListener(
      'click',
      later(function () {
        return withCode('POST', '/api/me/totp/recovery-codes', function (answer) {
          state.codes = answer.recoveryCodes;
          say('New recovery codes: the old ones no longer work.');
        });
      }),
    );
    off.addEventListener(
      'click',
      later(function () {
        return withCode(
          'DELETE',
          '/api/me/totp',
          function () {
            state.totp = false;
            say('Two-factor sign-in is off.');
          },
          true,
        );
      }),
    );
    replace(
      target,
      el('p', { id: 'totp-state' }, el('span', { class: 'badge badge-ok', text: 'On' }), ' Sign-in asks for a code.'),
      errorLine(),
      el(
        'div',
        { class: 'field' },
        el('label', { for: 'totp-current-code', text: 'A current code (or, to turn it off, a recovery code)' }),
        code,
      ),
      el('div', { class: 'inline-form' }, renew, off),
    );
  }

  function enrolment(e: { secret: string; qrSvg: string }): HTMLElement {
    const code = codeInput('totp-code', 'The code your authenticator app shows');
    const confirm = el('button', {
      type: 'submit',
      class: 'button button-primary',
      id: 'totp-confirm',
      text: 'Confirm',
    });
    const cancel = el('button', { type: 'button', class: 'button button-quiet', text: 'Cancel' });
    cancel.addEventListener('click', function () {
      state.enrolment = null;
      state.error = '';
      renderTotp();
    });
    const form = el(
      'form',
      { id: 'totp-enrol', novalidate: true },
      el('p', { text: 'Scan this code with your authenticator app, or type the secret into it:' }),
      el('img', {
        class: 'totp-qr',
        id: 'totp-qr',
        alt: 'QR code of the two-factor secret',
        src: 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(e.qrSvg),
      }),
      el('p', {}, 'Secret: ', el('code', { class: 'mono', id: 'totp-secret', text: e.secret })),
      el('div', { class: 'field' }, el('label', { for: 'totp-code', text: 'The 6-digit code it shows' }), code),
      el('div', { class: 'inline-form' }, cancel, confirm),
    );
    form.addEventListener(
      'submit',
      later(async function (event) {
        event.preventDefault();
        state.error = '';
        const value = code.value.replace(/\s+/g, '');
        if (!/^[0-9]{6,8}$/.test(value)) {
          state.error = 'Type the 6-digit code your authenticator app shows.';
          renderTotp();
          return;
        }
        setBusy([confirm, cancel], true);
        try {
          const answer = await call('POST', '/api/me/totp/confirm', { code: value });
          if (answer) {
            state.totp = true;
            state.enrolment = null;
            state.codes = answer.recoveryCodes;
            say('Two-factor sign-in is on.');
          }
        } catch (caught) {
          state.error = failureOf(caught).message;
        }
        renderTotp();
      }),
    );
    window.setTimeout(function () {
      code.focus();
    }, 0);
    return form;
  }

  function recoveryCodes(codes: string[]): HTMLElement {
    const text = codes.join('\n') + '\n';
    const copied = el('span', { class: 'muted', role: 'status' });
    const copy = el('button', { type: 'button', class: 'button', id: 'recovery-copy', text: 'Copy' });
    copy.addEventListener(
      'click',
      later(async function () {
        try {
          await navigator.clipboard.writeText(text);
          copied.textContent = 'Copied.';
        } catch {
          copied.textContent = 'Select the codes and copy them.';
        }
      }),
    );
    const download = el('a', {
      class: 'button',
      id: 'recovery-download',
      download: 'svc-recovery-codes.txt',
      href: 'data:text/plain;charset=utf-8,' + encodeURIComponent(text),
      text: 'Download',
    });
    const done = el('button', { type: 'button', class: 'button button-primary', id: 'recovery-done', text: 'Done' });
    done.addEventListener('click', function () {
      state.codes = null;
      renderTotp();
    });
    return el(
      'div',
      { class: 'secret', role: 'group', 'aria-label': 'Recovery codes' },
      el(
        'p',
        { class: 'secret-title' },
        el('strong', { text: 'Recovery codes' }),
        ' · shown once: keep them where you keep passwords. Each signs you in once without your phone.',
      ),
      el(
        'ul',
        { class: 'recovery-codes', id: 'recovery-codes' },
        codes.map(function (c) {
          return el('li', { text: c });
        }),
      ),
      el('div', { class: 'inline-form' }, copy, download, done),
      copied,
    );
  }

  // -- sessions --

  async function loadSessions() {
    state.pending += 1;
    try {
      const answer = await api('GET', '/api/me/sessions');
      renderSessions(answer.sessions || []);
      updated();
    } catch (caught) {
      const err = failureOf(caught);
      if (sessionEnded(err)) return;
      replace($('#account-sessions-body'), el('p', { class: 'notice notice-error', role: 'alert', text: err.message }));
    } finally {
      state.pending -= 1;
    }
  }

  async function endSessions(path: string, buttons: HTMLButtonElement[]) {
    setBusy(buttons, true);
    try {
      const answer = await call('DELETE', path, {});
      if (answer) {
        const n = answer.sessionsEnded || 0;
        say(n === 1 ? 'One session signed out.' : n + ' sessions signed out.');
      }
    } catch (caught) {
      showNotice($('#error'), failureOf(caught).message);
    }
    await loadSessions();
  }

  function renderSessions(list: Data[]) {
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
                void endSessions('/api/me/sessions/' + encodeURIComponent(s.id), buttons);
              }),
        ),
      );
    });
    const everywhere = others.length
      ? confirmButton('Sign out everywhere else…', 'Sign them out', function (buttons) {
          void endSessions('/api/me/sessions', buttons);
        })
      : el('p', { class: 'hint', text: 'You are signed in nowhere else.' });
    replace($('#account-sessions-body'), stackTable(['Session', 'Signed in', 'Ends', null], rows), everywhere);
  }

  renderTotp();
  keepFresh(loadSessions, function () {
    return state.pending > 0 || state.enrolment !== null || state.codes !== null;
  });
}
