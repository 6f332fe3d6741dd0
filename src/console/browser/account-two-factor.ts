import { $, el, failureOf, later, replace, setBusy, type Data } from './helpers.js';
import { say } from './sections-shared.js';
import type { AccountPage } from './account-page.js';

/**
 * The account page's two-factor sign-in: off, with a button that starts an enrolment; the
 * enrolment, a QR code (an SVG the server draws, shown as a data: image, which the page's img-src
 * allows) and the secret for typing in, confirmed with a code; the ten recovery codes shown once
 * with Copy and Download; on, where a current code replaces the recovery codes and a code or a
 * recovery code turns it off.
 */

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

function errorLine(page: AccountPage): HTMLElement | null {
  return page.state.error ? el('p', { class: 'notice notice-error', role: 'alert', text: page.state.error }) : null;
}

/** Draws the two-factor part as the state says: the codes to keep, the enrolment, off, or on. */
export function renderTotp(page: AccountPage): void {
  const { state } = page;
  const target = $('#account-totp-body');
  if (state.codes) return replace(target, errorLine(page), recoveryCodes(page, state.codes));
  if (state.enrolment) return replace(target, errorLine(page), enrolment(page, state.enrolment));
  if (!state.totp) return renderOff(page, target);
  renderOn(page, target);
}

function renderOff(page: AccountPage, target: HTMLElement): void {
  const { state } = page;
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
        const answer = await page.call('POST', '/api/me/totp', {});
        if (answer) state.enrolment = { secret: answer.secret, qrSvg: answer.qrSvg };
      } catch (caught) {
        state.error = failureOf(caught).message;
      }
      renderTotp(page);
    }),
  );
  replace(
    target,
    el('p', { id: 'totp-state', text: 'Two-factor sign-in is off: your password alone signs you in.' }),
    errorLine(page),
    start,
  );
}

function renderOn(page: AccountPage, target: HTMLElement): void {
  const { state } = page;
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
      renderTotp(page);
      return;
    }
    setBusy([renew, off, code], true);
    try {
      const answer = await page.call(method, path, { code: value });
      if (answer) done(answer);
    } catch (caught) {
      state.error = failureOf(caught).message;
    }
    renderTotp(page);
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
    errorLine(page),
    el(
      'div',
      { class: 'field' },
      el('label', { for: 'totp-current-code', text: 'A current code (or, to turn it off, a recovery code)' }),
      code,
    ),
    el('div', { class: 'inline-form' }, renew, off),
  );
}

function enrolment(page: AccountPage, e: { secret: string; qrSvg: string }): HTMLElement {
  const { state } = page;
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
    renderTotp(page);
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
        renderTotp(page);
        return;
      }
      setBusy([confirm, cancel], true);
      try {
        const answer = await page.call('POST', '/api/me/totp/confirm', { code: value });
        if (answer) {
          state.totp = true;
          state.enrolment = null;
          state.codes = answer.recoveryCodes;
          say('Two-factor sign-in is on.');
        }
      } catch (caught) {
        state.error = failureOf(caught).message;
      }
      renderTotp(page);
    }),
  );
  window.setTimeout(function () {
    code.focus();
  }, 0);
  return form;
}

function recoveryCodes(page: AccountPage, codes: string[]): HTMLElement {
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
    page.state.codes = null;
    renderTotp(page);
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
