import { clock, entityName } from './text.js';
import { listAll } from './sections-shared.js';
import { keepFresh } from './console-page.js';
import { body, failureOf, $, el, replace, api, showNotice, later, setBusy, time, type Data } from './helpers.js';

const base = '/api/w/' + encodeURIComponent(body.dataset.workspace ?? '');
const state: { records: Data[]; next: Data; filter: Record<string, Data>; pending: number; paged: boolean } = {
  records: [],
  next: null,
  filter: {},
  pending: 0,
  paged: false,
};
// Names for the ids the records carry: the workspace's people (from the page), its agents (read below).
const names: Record<string, string> = {};
let form: HTMLFormElement;
let verifyButton: HTMLButtonElement;

function sessionEnded(err: Data) {
  if (err && err.status === 401) {
    window.location.assign('/login');
    return true;
  }
  return false;
}

function query(before?: string | number | null) {
  const parts = ['order=desc', 'limit=50'];
  Object.keys(state.filter).forEach(function (k) {
    if (state.filter[k]) parts.push(k + '=' + encodeURIComponent(state.filter[k]));
  });
  if (before !== undefined && before !== null) parts.push('before=' + before);
  return base + '/ledger?' + parts.join('&');
}

/** A field of the filter form, by name. */
function field(name: string): HTMLInputElement {
  return form.elements.namedItem(name) as HTMLInputElement;
}

function readFilter() {
  const f: Record<string, Data> = {};
  ['kind', 'actor', 'subject'].forEach(function (k) {
    const v = field(k).value.trim();
    if (v) f[k] = v;
  });
  // Dates are whole UTC days: from the start of the first to the end of the last.
  if (field('from').value) f.from = field('from').value + 'T00:00:00Z';
  if (field('to').value) f.to = new Date(Date.parse(field('to').value + 'T00:00:00Z') + 86400000).toISOString();
  return f;
}

async function load() {
  state.pending += 1;
  const results = await Promise.allSettled([
    api('GET', base + '/ledger/checkpoint'),
    state.paged ? Promise.resolve(null) : api('GET', query()),
    // Names only make ids readable: without them the ids are shown, so a failure is not an error.
    listAll(base + '/agents').catch(function () {
      return [];
    }),
  ]);
  if (results[2].status === 'fulfilled')
    results[2].value.forEach(function (a: Data) {
      names[a.id] = a.name;
    });
  state.pending -= 1;
  if (
    results.some(function (r) {
      return r.status === 'rejected' && sessionEnded(r.reason);
    })
  )
    return;
  if (results[0].status === 'fulfilled') renderCheckpoint(results[0].value);
  else
    replace(
      $('#checkpoint-body'),
      el('p', { class: 'notice notice-error', role: 'alert', text: results[0].reason.message }),
    );
  if (!state.paged) {
    if (results[1].status === 'fulfilled') {
      state.records = results[1].value.data;
      state.next = results[1].value.next;
      renderRecords();
    } else
      replace(
        $('#records-body'),
        el('p', { class: 'notice notice-error', role: 'alert', text: results[1].reason.message }),
      );
  }
  $('#updated').textContent = 'Updated ' + clock(new Date());
}

function renderCheckpoint(head: Data) {
  const c = head.checkpoint;
  const rows = [
    ['Records', String(head.size)],
    ['Origin', head.origin],
  ];
  if (c) {
    rows.push(['Latest checkpoint', 'covers ' + c.size + ' of ' + head.size + ' records']);
    rows.push(['Signed', null, time(c.at)]);
    rows.push(['Ledger key', c.kid]);
  } else {
    rows.push(['Latest checkpoint', 'none yet: the first is signed within a second of the first record']);
  }
  const list = el(
    'dl',
    { class: 'facts', id: 'checkpoint' },
    rows.map(function (r) {
      return [
        el('dt', { text: r[0] }),
        el('dd', { class: r[0] === 'Origin' || r[0] === 'Ledger key' ? 'mono' : null }, r[2] || r[1]),
      ];
    }),
  );
  const note = c
    ? el(
        'details',
        { class: 'note' },
        el('summary', { text: 'Signed note' }),
        el('pre', { class: 'mono', text: c.note }),
      )
    : null;
  replace($('#checkpoint-body'), list, note);
}

async function verifyNow() {
  setBusy([verifyButton], true);
  replace($('#verify-result'), el('p', { class: 'muted', text: 'Verifying…' }));
  try {
    const r = await api('POST', base + '/ledger/verify', {});
    const head = r.ok
      ? el(
          'p',
          { class: 'verify-line' },
          el('span', { class: 'badge badge-ok', id: 'verify-badge', text: 'Verified' }),
          ' ' +
            r.size +
            ' records, ' +
            r.checkpoints +
            (r.checkpoints === 1 ? ' signed checkpoint' : ' signed checkpoints') +
            (r.uncheckpointed ? '; ' + r.uncheckpointed + ' newer not yet in a checkpoint' : '') +
            '.',
        )
      : el(
          'p',
          { class: 'verify-line' },
          el('span', { class: 'badge badge-danger', id: 'verify-badge', text: 'Broken' }),
          r.firstBadIndex !== null ? ' First bad record: ' + r.firstBadIndex + '. ' : ' ',
          r.problem || '',
        );
    replace(
      $('#verify-result'),
      head,
      el(
        'p',
        { class: 'hint' },
        'Checked ',
        time(r.checkedAt),
        ', the same check as ',
        el('code', { text: 'svc ledger verify' }),
        '.',
      ),
    );
  } catch (caught) {
    const err = failureOf(caught);
    if (sessionEnded(err)) return;
    replace(
      $('#verify-result'),
      el('p', { class: 'notice notice-error', role: 'alert', text: 'Verify now: ' + err.message }),
    );
  } finally {
    setBusy([verifyButton], false);
  }
}

function renderRecords() {
  const target = $('#records-body');
  let more: Data = null;
  if (state.next !== null) {
    more = el('button', { type: 'button', class: 'button', id: 'records-more', text: 'Show older' });
    more.addEventListener('click', showOlder);
  }
  if (state.records.length === 0) {
    // A filtered read examines a bounded number of records at a time: older ones may still match.
    const none = Object.keys(state.filter).length
      ? state.next !== null
        ? 'No record matches these filters among the newest ones read so far.'
        : 'No record matches these filters.'
      : 'No records yet.';
    replace(
      target,
      el('p', { class: 'empty', id: 'records-empty', text: none }),
      more ? el('p', { class: 'more' }, more) : null,
    );
    return;
  }
  const table = el(
    'table',
    { class: 'records', id: 'records' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ['#', 'When', 'Kind', 'Actor', 'Subject', 'Data'].map(function (h) {
          return el('th', { scope: 'col', text: h });
        }),
      ),
    ),
    el('tbody', {}, state.records.map(recordRow)),
  );
  replace(target, el('div', { class: 'table-wrap' }, table), more ? el('p', { class: 'more' }, more) : null);
}

function recordRow(r: Data) {
  const data = JSON.stringify(r.data);
  // data-label names each cell where a phone shows a record as a stack of lines (app.css).
  return el(
    'tr',
    { data: { index: r.index } },
    el('td', { class: 'mono index', text: String(r.index) }),
    el('td', { class: 'when' }, time(r.at)),
    el('td', {}, el('span', { class: 'kind', text: r.kind })),
    el('td', { class: 'wrap actor', 'data-label': 'Actor' }, named(r.actor)),
    el('td', { class: 'wrap subject', 'data-label': 'Subject' }, named(r.subject)),
    el(
      'td',
      { class: 'data' },
      data && data !== '{}'
        ? el(
            'details',
            {},
            el('summary', { text: data.length > 48 ? data.slice(0, 48) + '…' : data }),
            el('pre', { class: 'mono', text: JSON.stringify(r.data, null, 2) }),
          )
        : el('span', { class: 'muted', text: '—' }),
    ),
  );
}

/** An actor or a subject: its name when the page knows it (the id on hover), else the id itself. */
function named(raw: unknown) {
  const text = raw === undefined || raw === null ? '' : String(raw);
  const name = entityName(text, names);
  return name === null
    ? el('span', { class: 'mono', text: text })
    : el('span', { class: 'named', title: text, 'data-id': text, text: name });
}

async function showOlder() {
  const button = $<HTMLButtonElement>('#records-more');
  setBusy([button], true);
  state.pending += 1;
  try {
    const page = await api('GET', query(state.next));
    state.records = state.records.concat(page.data);
    state.next = page.next;
    state.paged = true;
    renderRecords();
  } catch (caught) {
    const err = failureOf(caught);
    if (sessionEnded(err)) return;
    showNotice($('#error'), 'Show older: ' + err.message);
    setBusy([button], false);
  } finally {
    state.pending -= 1;
  }
}

/**
 * The ledger section (/console/ledger): the newest signed checkpoint and "Verify now" (the same
 * check as `svc ledger verify`, run by the server over its store), and the records newest first,
 * filtered by kind, actor, subject and dates, with "Show older" to page on. Record data (which
 * people and agents wrote) is shown as JSON text, never as markup.
 */
export function section_ledger() {
  document.querySelectorAll<HTMLElement>('#people-names li').forEach(function (li) {
    if (li.dataset.id) names[li.dataset.id] = li.textContent ?? '';
  });
  form = $<HTMLFormElement>('#ledger-filter');
  verifyButton = $<HTMLButtonElement>('#verify-now');

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    state.filter = readFilter();
    state.paged = false;
    showNotice($('#error'), '');
    void load();
  });
  $('#filter-clear').addEventListener('click', function () {
    form.reset();
    state.filter = {};
    state.paged = false;
    void load();
  });
  verifyButton.addEventListener('click', later(verifyNow));
  keepFresh(load, function () {
    return state.pending > 0;
  });
}
