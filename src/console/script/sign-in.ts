/**
 * /login in the browser: email and password to POST /api/session; on 401 totp_required the code
 * field appears and the next try sends it; a one-time password is replaced (PUT /api/me/password)
 * before the person goes on to /console.
 * Browser JavaScript kept as text (String.raw: no backtick and no dollar-brace inside); it runs
 * inside the one function of script/index.ts, beside the other parts.
 */
export const SIGN_IN = String.raw`
  // ---- sign-in ------------------------------------------------------------------------------

  function loginPage() {
    var form = $('#signin');
    var error = $('#signin-error');
    var totpRow = $('#totp-row');
    var totp = $('#totp');
    var password = $('#password');
    var submit = $('button[type=submit]', form);

    form.addEventListener('submit', async function (event) {
      event.preventDefault();
      var email = $('#email').value.trim();
      if (!email || !password.value) { showNotice(error, 'Enter your email and password.'); return; }
      var payload = { email: email, password: password.value };
      var code = totp.value.replace(/\s+/g, '');
      if (!totpRow.hidden && code) payload.totp = code;
      showNotice(error, '');
      setBusy([submit], true);
      try {
        var session = await api('POST', '/api/session', payload);
        if (session && session.user && session.user.mustChangePassword) {
          choosePassword(password.value);
          return;
        }
        window.location.assign(body.dataset.next || '/console');
      } catch (err) {
        if (err.type === 'totp_required') {
          var first = totpRow.hidden;
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
    });
  }

  function choosePassword(current) {
    $('#signin').hidden = true;
    $('#new-password-username').value = $('#email').value.trim();
    var form = $('#new-password');
    form.hidden = false;
    $('#next-password').focus();
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      changePassword(form, current, $('#new-password-error'));
    });
  }

  async function changePassword(form, current, error) {
    var next = $('#next-password').value;
    if (next !== $('#confirm-password').value) { showNotice(error, 'The two new passwords differ.'); return; }
    var submit = $('button[type=submit]', form);
    showNotice(error, '');
    setBusy([submit], true);
    try {
      await api('PUT', '/api/me/password', { currentPassword: current, newPassword: next });
      window.location.assign('/console');
    } catch (err) {
      showNotice(error, err.message);
      setBusy([submit], false);
    }
  }

`;
