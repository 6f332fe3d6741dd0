import { body, failureOf, $, find, api, showNotice, later, setBusy } from './helpers.js';
import { changePassword } from './sign-in.js';
/**
 * Every console page in the browser: the workspace picker, sign-out, the one-time password form,
 * then the section shown (body data-section, run through the section runners of main.ts), and
 * keepFresh, the refresh every section uses: on demand, and every 20 s while the tab is visible
 * and the person is not typing.
 */
// ---- console ------------------------------------------------------------------------------

export function consolePage(sectionRunners: Record<string, () => void>) {
  $('#sign-out').addEventListener('click', later(signOut));
  const picker = find<HTMLSelectElement>('#workspace-select');
  if (picker) {
    $('#workspace-go').hidden = true;
    picker.addEventListener('change', function () {
      $<HTMLFormElement>('#workspace-form').submit();
    });
  }
  const create = find<HTMLFormElement>('#new-workspace-form');
  if (create) {
    create.addEventListener(
      'submit',
      later(async function (event: SubmitEvent) {
        event.preventDefault();
        await createWorkspace(create);
      }),
    );
  }
  const change = find<HTMLFormElement>('#change-password');
  if (change) {
    change.addEventListener('submit', function (event) {
      event.preventDefault();
      void changePassword(change, $<HTMLInputElement>('#current-password').value, $('#change-error'));
    });
  }
  clearNoticesOnNextAction();
  if (!body.dataset.workspace) return;
  const run = sectionRunners[body.dataset.section ?? ''];
  if (run) run();
}

/** Makes the workspace the form names, then opens it; a refusal is shown under the form. */
async function createWorkspace(form: HTMLFormElement): Promise<void> {
  const error = $('#new-workspace-error');
  const submit = $<HTMLButtonElement>('button[type=submit]', form);
  showNotice(error, '');
  setBusy([submit], true);
  try {
    const made = await api('POST', '/api/workspaces', { name: $<HTMLInputElement>('#new-workspace-name').value });
    window.location.assign(`/console?w=${encodeURIComponent(String(made.id))}`);
  } catch (caught) {
    showNotice(error, failureOf(caught).message);
    setBusy([submit], false);
  }
}

/**
 * The quiet status line (#status: "Key minted", "Stopped: …") speaks of the last thing done, so
 * the next thing done clears it: a press of a button or a link (a move to another page starts
 * with none), a choice in a list, a form sent. What that next action says, it says after.
 * Only the person's own actions count (trusted events): a section that presses its own Refresh
 * after saving (`$('#refresh').click()`) must not wipe the notice it has just shown.
 */
function clearNoticesOnNextAction(): void {
  const clear = function (event: Event) {
    if (!event.isTrusted) return;
    const node = find('#status');
    if (!node || !node.textContent) return;
    node.textContent = '';
    node.className = 'status';
  };
  document.addEventListener(
    'click',
    function (event) {
      if (event.target instanceof Element && event.target.closest('button, a, summary, input[type=checkbox]'))
        clear(event);
    },
    true,
  );
  document.addEventListener('change', clear, true);
  document.addEventListener('submit', clear, true);
}

/**
 * A section's refresh: now, on the Refresh button, and every 20 s while the tab is visible,
 * never while the person is typing or a request of the section is under way (busy()).
 */
export function keepFresh(load: () => unknown, busy: () => boolean): void {
  $('#refresh').addEventListener('click', function () {
    load();
  });
  load();
  window.setInterval(function () {
    const active = document.activeElement;
    const typing =
      active && (active.tagName === 'INPUT' || active.tagName === 'TEXTAREA' || active.tagName === 'SELECT');
    if (document.visibilityState === 'visible' && !typing && !busy()) load();
  }, 20000);
}

export async function signOut() {
  const button = $<HTMLButtonElement>('#sign-out');
  setBusy([button], true);
  try {
    await api('DELETE', '/api/session', {});
    window.location.assign('/login');
  } catch (caught) {
    const err = failureOf(caught);
    if (err.status === 401) {
      window.location.assign('/login');
      return;
    }
    showNotice($('#error'), err.message);
    setBusy([button], false);
  }
}
