/**
 * Every console page in the browser: the workspace picker, sign-out, the one-time password form,
 * then the section shown (body data-section, run through sectionRunners of script/index.ts), and
 * keepFresh, the refresh every section uses: on demand, and every 20 s while the tab is visible
 * and the person is not typing.
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
    var run = sectionRunners[body.dataset.section];
    if (run) run();
  }

  /**
   * A section's refresh: now, on the Refresh button, and every 20 s while the tab is visible,
   * never while the person is typing or a request of the section is under way (busy()).
   */
  function keepFresh(load, busy) {
    $('#refresh').addEventListener('click', function () { load(); });
    load();
    window.setInterval(function () {
      var active = document.activeElement;
      var typing = active && (active.tagName === 'INPUT' || active.tagName === 'TEXTAREA' || active.tagName === 'SELECT');
      if (document.visibilityState === 'visible' && !typing && !busy()) load();
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
