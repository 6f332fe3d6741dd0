import { clock } from './text.js';
import {
  body,
  failureOf,
  $,
  find,
  el,
  replace,
  api,
  showNotice,
  later,
  setBusy,
  type Data,
  type Child,
  type Control,
} from './helpers.js';
/**
 * What the console's sections share in the browser: the workspace they work in, the quiet status
 * line, a session that ended, every page of a list, a secret shown once with a copy button, a
 * two-step confirmation, and mandate rules and ledger actors as a person reads them. And the
 * pieces every section writes alike:
 * - itemWriter(section): a section's write(key, label, buttons, method, path, payload, done) on
 *   one item (the error beside the item, the buttons busy, the section's writes counted, a
 *   reload after), given the section's { base, state, itemErrors, load };
 * - submitForm(state, error, buttons, method, url, payload, done, reload): a form's write (its
 *   error line, its buttons busy, the writes counted, the reload after);
 * - stackTable(headers, rows): a list as a table that stacks on narrow screens;
 * - loadPart(state, name, work) and drawList(name, list, empty, items): a section of one list
 *   (budgets, webhooks) read and drawn in #{name}-body, its count in #{name}-count.
 */
// ---- shared by the sections ---------------------------------------------------------------

/** The workspace shown and the person: ids from the body, the API base of the workspace. */
/** The workspace shown and the person (body data-workspace, data-user), and the workspace's API base. */
export interface WorkspaceContext {
  wid: string;
  me: string;
  base: string;
}

export function workspaceContext(): WorkspaceContext {
  const wid = body.dataset.workspace ?? '';
  return { wid: wid, me: body.dataset.user ?? '', base: '/api/w/' + encodeURIComponent(wid) };
}

/** The quiet line above the sections: what the last write did ('warn' when not as asked). */
export function say(message: string, kind?: 'warn') {
  const node = find('#status');
  if (!node) return;
  node.textContent = message || '';
  node.className = 'status' + (kind === 'warn' ? ' status-warn' : '');
}

/** A 401 means the session ended: the person is sent to sign in again. */
export function sessionEnded(err: { status?: number } | null | undefined): boolean {
  if (err && err.status === 401) {
    window.location.assign('/login');
    return true;
  }
  return false;
}

/** Every page of a list route (limit 200 a page, at most 25 pages): the items, in order. */
export async function listAll(path: string): Promise<Data[]> {
  let out: Data[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 25; i += 1) {
    const sep = path.indexOf('?') === -1 ? '?' : '&';
    const page = await api('GET', path + sep + 'limit=200' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    out = out.concat(page.data || []);
    cursor = page.next;
    if (!cursor) break;
  }
  return out;
}

/**
 * A section's write on one of its items: write(key, label, buttons, method, path, payload,
 * done). It clears the item's error and the page's error line, keeps the buttons busy and the
 * section's writes counted (state.pending) while it runs, calls done(answer) on success, or
 * keeps label + the error's message in itemErrors[key] for the item's error line; a 401 ends the
 * session. Then it reloads the section (section.load) and resolves to the answer (null on a
 * failure). section: { base (the API base the path follows), state, itemErrors, load }.
 */
export interface Section {
  base: string;
  state: { pending: number };
  itemErrors: Record<string, string | null>;
  load(): Promise<unknown>;
}

/** itemWriter's write. */
export type ItemWrite = (
  key: string,
  label: string,
  buttons: Array<Control | null>,
  method: string,
  path: string,
  payload: unknown,
  done?: (answer: Data) => void,
) => Promise<Data>;

export function itemWriter(section: Section): ItemWrite {
  return async function write(key, label, buttons, method, path, payload, done) {
    delete section.itemErrors[key];
    showNotice($('#error'), '');
    setBusy(buttons, true);
    section.state.pending += 1;
    let answer: Data = null;
    try {
      answer = await api(method, section.base + path, payload);
      if (done) done(answer);
    } catch (caught) {
      const err = failureOf(caught);
      if (sessionEnded(err)) return null;
      section.itemErrors[key] = label + ': ' + err.message;
      say('');
    } finally {
      section.state.pending -= 1;
      setBusy(buttons, false);
    }
    await section.load();
    return answer;
  };
}

/**
 * A form's write: it clears the form's error line (error), keeps its buttons busy and the
 * section's writes counted (state.pending) while it runs, then awaits done(answer), or shows the
 * error's message in the form's error line; a 401 ends the session. Then reload(), when given.
 */
export async function submitForm(
  state: { pending: number },
  error: HTMLElement,
  buttons: Array<Control | null>,
  method: string,
  url: string,
  payload: unknown,
  done?: (answer: Data) => unknown,
  reload?: () => Promise<unknown>,
): Promise<void> {
  showNotice(error, '');
  setBusy(buttons, true);
  state.pending += 1;
  try {
    const answer = await api(method, url, payload);
    if (done) await done(answer);
  } catch (caught) {
    const err = failureOf(caught);
    if (sessionEnded(err)) return;
    showNotice(error, err.message);
  } finally {
    state.pending -= 1;
    setBusy(buttons, false);
  }
  if (reload) await reload();
}

/**
 * A list as a table that stacks on narrow screens, in its scrolling wrapper: a column heading a
 * header (null: the actions column, named for screen readers only), a row an item.
 */
export function stackTable(headers: Array<string | null>, rows: Child): HTMLElement {
  return el(
    'div',
    { class: 'table-wrap' },
    el(
      'table',
      { class: 'table-stack' },
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          headers.map(function (h) {
            return h === null
              ? el('th', { scope: 'col' }, el('span', { class: 'visually-hidden', text: 'Actions' }))
              : el('th', { scope: 'col', text: h });
          }),
        ),
      ),
      el('tbody', {}, rows),
    ),
  );
}

/**
 * A section's reload of its one part: work() reads and draws it, then the time of the update is
 * shown; on a failure the error's message stands in the part (#{name}-body) instead; a 401 ends
 * the session. The section's reads and writes are counted while it runs (state.pending).
 */
export async function loadPart(state: { pending: number }, name: string, work: () => Promise<void>): Promise<void> {
  state.pending += 1;
  try {
    await work();
    updated();
  } catch (caught) {
    const err = failureOf(caught);
    if (sessionEnded(err)) return;
    replace($('#' + name + '-body'), el('p', { class: 'notice notice-error', role: 'alert', text: err.message }));
  } finally {
    state.pending -= 1;
  }
}

/**
 * A part's list: its count in #{name}-count (blank for none), and in #{name}-body its items
 * (items(list)), or the line that says there are none (empty).
 */
export function drawList<T>(name: string, list: T[], empty: Child, items: (list: T[]) => Child): void {
  $('#' + name + '-count').textContent = list.length ? String(list.length) : '';
  replace($('#' + name + '-body'), list.length ? items(list) : empty);
}

export function updated(): void {
  const node = find('#updated');
  if (node) node.textContent = 'Updated ' + clock(new Date());
}

/**
 * A secret shown once (a key or a token): its value in a read-only field, a Copy button, and a
 * Done button that forgets it. The value is never stored by the page.
 */
export function secretOnce(label: string, value: string, onDone?: () => void): HTMLElement {
  const field = el('input', {
    type: 'text',
    readonly: true,
    class: 'mono secret-value',
    value: value,
    'aria-label': label,
    spellcheck: 'false',
  });
  const copied = el('span', { class: 'muted secret-copied', role: 'status' });
  const copy = el('button', { type: 'button', class: 'button', text: 'Copy' });
  copy.addEventListener(
    'click',
    later(async function () {
      field.focus();
      field.select();
      try {
        await navigator.clipboard.writeText(value);
        copied.textContent = 'Copied.';
      } catch {
        copied.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
      }
    }),
  );
  const done = el('button', { type: 'button', class: 'button button-quiet', text: 'Done' });
  const box = el(
    'div',
    { class: 'secret', role: 'group', 'aria-label': label },
    el(
      'p',
      { class: 'secret-title' },
      el('strong', { text: label }),
      ' · shown once: store it now, it cannot be shown again.',
    ),
    el('div', { class: 'secret-row' }, field, copy, done),
    copied,
  );
  done.addEventListener('click', function () {
    box.remove();
    if (onDone) onDone();
  });
  return box;
}

/**
 * A button that asks once more before it acts: the first click shows Confirm and Cancel beside
 * it. onConfirm(buttons) runs the write.
 */
export function confirmButton(
  label: string,
  confirmLabel: string,
  onConfirm: (buttons: HTMLButtonElement[]) => unknown,
  kind?: string,
): HTMLElement {
  const wrap = el('span', { class: 'confirm' });
  const first = el('button', { type: 'button', class: 'button ' + (kind || 'button-outline-danger'), text: label });
  first.addEventListener('click', function () {
    const yes = el('button', { type: 'button', class: 'button button-danger', text: confirmLabel });
    const no = el('button', { type: 'button', class: 'button button-quiet', text: 'Cancel' });
    no.addEventListener('click', function () {
      replace(wrap, first);
    });
    yes.addEventListener('click', function () {
      onConfirm([yes, no]);
    });
    replace(wrap, yes, no);
    yes.focus();
  });
  wrap.append(first);
  return wrap;
}
