/**
 * The ledger section (/console/ledger): the newest signed checkpoint and "Verify now" (the same
 * check as `svc ledger verify`, run by the server over its store), and the records newest first,
 * filtered by kind, actor, subject and dates, with "Show older" to page on. Record data (which
 * people and agents wrote) is shown as JSON text, never as markup.
 * Browser JavaScript kept as text (String.raw: no backtick and no dollar-brace inside); it runs
 * inside the one function of script/index.ts, beside the other parts.
 */
export const SECTION_LEDGER = String.raw`
  function section_ledger() {
    var base = '/api/w/' + encodeURIComponent(body.dataset.workspace);
    var state = { records: [], next: null, filter: {}, pending: 0, paged: false };
    var form = $('#ledger-filter');
    var verifyButton = $('#verify-now');

    function sessionEnded(err) {
      if (err && err.status === 401) { window.location.assign('/login'); return true; }
      return false;
    }

    function query(before) {
      var parts = ['order=desc', 'limit=50'];
      Object.keys(state.filter).forEach(function (k) {
        if (state.filter[k]) parts.push(k + '=' + encodeURIComponent(state.filter[k]));
      });
      if (before !== undefined && before !== null) parts.push('before=' + before);
      return base + '/ledger?' + parts.join('&');
    }

    function readFilter() {
      var f = {};
      ['kind', 'actor', 'subject'].forEach(function (k) { var v = form.elements[k].value.trim(); if (v) f[k] = v; });
      // Dates are whole UTC days: from the start of the first to the end of the last.
      if (form.elements.from.value) f.from = form.elements.from.value + 'T00:00:00Z';
      if (form.elements.to.value) f.to = new Date(Date.parse(form.elements.to.value + 'T00:00:00Z') + 86400000).toISOString();
      return f;
    }

    async function load() {
      state.pending += 1;
      var results = await Promise.allSettled([
        api('GET', base + '/ledger/checkpoint'),
        state.paged ? Promise.resolve(null) : api('GET', query()),
      ]);
      state.pending -= 1;
      if (results.some(function (r) { return r.status === 'rejected' && sessionEnded(r.reason); })) return;
      if (results[0].status === 'fulfilled') renderCheckpoint(results[0].value);
      else replace($('#checkpoint-body'), el('p', { class: 'notice notice-error', role: 'alert', text: results[0].reason.message }));
      if (!state.paged) {
        if (results[1].status === 'fulfilled') { state.records = results[1].value.data; state.next = results[1].value.next; renderRecords(); }
        else replace($('#records-body'), el('p', { class: 'notice notice-error', role: 'alert', text: results[1].reason.message }));
      }
      $('#updated').textContent = 'Updated ' + clock(new Date());
    }

    function renderCheckpoint(head) {
      var c = head.checkpoint;
      var rows = [
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
      var list = el('dl', { class: 'facts', id: 'checkpoint' }, rows.map(function (r) {
        return [el('dt', { text: r[0] }), el('dd', { class: r[0] === 'Origin' || r[0] === 'Ledger key' ? 'mono' : null }, r[2] || r[1])];
      }));
      var note = c ? el('details', { class: 'note' }, el('summary', { text: 'Signed note' }), el('pre', { class: 'mono', text: c.note })) : null;
      replace($('#checkpoint-body'), list, note);
    }

    async function verifyNow() {
      setBusy([verifyButton], true);
      replace($('#verify-result'), el('p', { class: 'muted', text: 'Verifying…' }));
      try {
        var r = await api('POST', base + '/ledger/verify', {});
        var head = r.ok
          ? el('p', { class: 'verify-line' }, el('span', { class: 'badge badge-ok', id: 'verify-badge', text: 'Verified' }),
              ' ' + r.size + ' records, ' + r.checkpoints + (r.checkpoints === 1 ? ' signed checkpoint' : ' signed checkpoints') +
              (r.uncheckpointed ? '; ' + r.uncheckpointed + ' newer not yet in a checkpoint' : '') + '.')
          : el('p', { class: 'verify-line' }, el('span', { class: 'badge badge-danger', id: 'verify-badge', text: 'Broken' }),
              r.firstBadIndex !== null ? ' First bad record: ' + r.firstBadIndex + '. ' : ' ', r.problem || '');
        replace($('#verify-result'), head, el('p', { class: 'hint' }, 'Checked ', time(r.checkedAt), ', the same check as ', el('code', { text: 'svc ledger verify' }), '.'));
      } catch (err) {
        if (sessionEnded(err)) return;
        replace($('#verify-result'), el('p', { class: 'notice notice-error', role: 'alert', text: 'Verify now: ' + err.message }));
      } finally {
        setBusy([verifyButton], false);
      }
    }

    function renderRecords() {
      var target = $('#records-body');
      var more = null;
      if (state.next !== null) {
        more = el('button', { type: 'button', class: 'button', id: 'records-more', text: 'Show older' });
        more.addEventListener('click', showOlder);
      }
      if (state.records.length === 0) {
        // A filtered read examines a bounded number of records at a time: older ones may still match.
        var none = Object.keys(state.filter).length
          ? (state.next !== null ? 'No record matches these filters among the newest ones read so far.' : 'No record matches these filters.')
          : 'No records yet.';
        replace(target, el('p', { class: 'empty', id: 'records-empty', text: none }), more ? el('p', { class: 'more' }, more) : null);
        return;
      }
      var table = el('table', { class: 'records', id: 'records' },
        el('thead', {}, el('tr', {}, ['#', 'When', 'Kind', 'Actor', 'Subject', 'Data'].map(function (h) { return el('th', { scope: 'col', text: h }); }))),
        el('tbody', {}, state.records.map(recordRow)));
      replace(target, el('div', { class: 'table-wrap' }, table), more ? el('p', { class: 'more' }, more) : null);
    }

    function recordRow(r) {
      var data = JSON.stringify(r.data);
      // data-label names each cell where a phone shows a record as a stack of lines (app.css).
      return el('tr', { data: { index: r.index } },
        el('td', { class: 'mono index', text: String(r.index) }),
        el('td', { class: 'when' }, time(r.at)),
        el('td', {}, el('span', { class: 'kind', text: r.kind })),
        el('td', { class: 'mono wrap', 'data-label': 'Actor', text: r.actor }),
        el('td', { class: 'mono wrap', 'data-label': 'Subject', text: r.subject }),
        el('td', { class: 'data' }, data && data !== '{}' ? el('details', {}, el('summary', { text: data.length > 48 ? data.slice(0, 48) + '…' : data }), el('pre', { class: 'mono', text: JSON.stringify(r.data, null, 2) })) : el('span', { class: 'muted', text: '—' })));
    }

    async function showOlder() {
      var button = $('#records-more');
      setBusy([button], true);
      state.pending += 1;
      try {
        var page = await api('GET', query(state.next));
        state.records = state.records.concat(page.data);
        state.next = page.next;
        state.paged = true;
        renderRecords();
      } catch (err) {
        if (sessionEnded(err)) return;
        showNotice($('#error'), 'Show older: ' + err.message);
        setBusy([button], false);
      } finally {
        state.pending -= 1;
      }
    }

    form.addEventListener('submit', function (event) {
      event.preventDefault();
      state.filter = readFilter();
      state.paged = false;
      showNotice($('#error'), '');
      load();
    });
    $('#filter-clear').addEventListener('click', function () {
      form.reset();
      state.filter = {};
      state.paged = false;
      load();
    });
    verifyButton.addEventListener('click', verifyNow);
    keepFresh(load, function () { return state.pending > 0; });
  }

`;
