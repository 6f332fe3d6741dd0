/**
 * /console in the browser: the workspace picker, sign-out, the one-time password form, and the
 * board (board.ts) with its refresh: on demand, and every 20 s while the tab is visible and the
 * person is not typing.
 * Browser JavaScript kept as text (String.raw: no backtick and no dollar-brace inside); it runs
 * inside the one function of script/index.ts, beside the other parts.
 */
export const CONSOLE_PAGE = String.raw`
  // ---- console ------------------------------------------------------------------------------

  function consolePage() {
    $('#sign-out').addEventListener('click', signOut);
    var picker = $('#workspace-select');
    if (picker) {
      $('#workspace-go').hidden = true;
      picker.addEventListener('change', function () { $('#workspace-form').submit(); });
    }
    var change = $('#change-password');
    if (change) {
      change.addEventListener('submit', function (event) {
        event.preventDefault();
        changePassword(change, $('#current-password').value, $('#change-error'));
      });
    }
    if (!body.dataset.workspace) return;
    var board = createBoard({
      wid: body.dataset.workspace,
      me: body.dataset.user,
      canDecide: body.dataset.canDecide === 'true',
      canStopAll: body.dataset.canStopAll === 'true',
      canReadMembers: body.dataset.canReadMembers === 'true',
    });
    $('#refresh').addEventListener('click', function () { board.load(); });
    board.load();
    // Quiet background refresh, never while the person is typing or a request is under way.
    window.setInterval(function () {
      var active = document.activeElement;
      var typing = active && (active.tagName === 'INPUT' || active.tagName === 'TEXTAREA');
      if (document.visibilityState === 'visible' && !typing && !board.busy()) board.load();
    }, 20000);
  }

  async function signOut() {
    var button = $('#sign-out');
    setBusy([button], true);
    try {
      await api('DELETE', '/api/session', {});
      window.location.assign('/login');
    } catch (err) {
      if (err.status === 401) { window.location.assign('/login'); return; }
      showNotice($('#error'), err.message);
      setBusy([button], false);
    }
  }

`;
