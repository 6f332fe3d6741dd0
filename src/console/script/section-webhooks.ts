/**
 * The webhooks section (/console/webhooks): the workspace's endpoints with their events, each
 * with its delivery log (newest first: event, state, tries with the receiver's status or error)
 * and a redelivery per delivery; adding an endpoint shows its signing secret once; removing one
 * asks to confirm in place. A delivery log that is open stays open across refreshes.
 * Browser JavaScript kept as text (String.raw: no backtick and no dollar-brace inside); it runs
 * inside the one function of script/index.ts, beside the other parts.
 */
export const SECTION_WEBHOOKS = String.raw`
  function section_webhooks() {
    var base = '/api/w/' + encodeURIComponent(body.dataset.workspace);
    var state = { endpoints: null, deliveries: {}, open: {}, confirming: {}, errors: {}, pending: 0 };
    var form = $('#webhook-form');

    function load() {
      return loadPart(state, 'webhooks', async function () {
        state.endpoints = (await api('GET', base + '/webhooks')).data;
        var open = state.endpoints.filter(function (e) { return state.open[e.id]; });
        var logs = await Promise.allSettled(open.map(function (e) { return api('GET', base + '/webhooks/' + encodeURIComponent(e.id) + '/deliveries'); }));
        logs.forEach(function (r, i) {
          if (r.status === 'fulfilled') { state.deliveries[open[i].id] = r.value.data; state.errors[open[i].id] = null; }
          else state.errors[open[i].id] = r.reason.message;
        });
        render();
      });
    }

    function render() {
      drawList('webhooks', state.endpoints, el('p', { class: 'empty', id: 'webhooks-empty', text: 'No endpoints yet. Add one below to receive events as signed POST requests.' }), function (list) {
        return el('ul', { class: 'endpoints', id: 'endpoint-list' }, list.map(endpointItem));
      });
    }

    function endpointItem(e) {
      var toggle = el('button', { type: 'button', class: 'button', 'aria-expanded': state.open[e.id] ? 'true' : 'false', text: state.open[e.id] ? 'Hide deliveries' : 'Deliveries' });
      toggle.addEventListener('click', function () {
        state.open[e.id] = !state.open[e.id];
        if (state.open[e.id]) load(); else render();
      });
      var remove;
      if (state.confirming[e.id]) {
        var yes = el('button', { type: 'button', class: 'button button-danger', text: 'Remove' });
        var no = el('button', { type: 'button', class: 'button button-quiet', text: 'Keep' });
        yes.addEventListener('click', function () { removeEndpoint(e, [yes, no]); });
        no.addEventListener('click', function () { delete state.confirming[e.id]; render(); });
        remove = el('span', { class: 'confirm' }, el('span', { class: 'muted', text: 'Remove this endpoint?' }), no, yes);
      } else {
        remove = el('button', { type: 'button', class: 'button button-outline-danger', text: 'Remove…' });
        remove.addEventListener('click', function () { state.confirming[e.id] = true; render(); });
      }
      return el('li', { class: 'endpoint', data: { endpoint: e.id } },
        el('div', { class: 'endpoint-head' },
          el('div', { class: 'endpoint-main' },
            el('div', { class: 'endpoint-url mono', text: e.url }),
            el('div', { class: 'item-meta' },
              e.disabledAt ? el('span', { class: 'badge badge-danger', text: 'Disabled: deliveries kept failing' }) : el('span', { class: 'badge badge-ok', text: 'Active' }),
              el('span', {}, 'Added ', time(e.createdAt)),
              el('span', { class: 'mono', text: e.id })),
            el('div', {}, e.events.map(function (t) { return el('span', { class: 'tag', text: t }); }))),
          el('div', { class: 'endpoint-actions' }, toggle, remove)),
        state.errors[e.id] ? el('p', { class: 'notice notice-error', role: 'alert', text: state.errors[e.id] }) : null,
        state.open[e.id] ? deliveryLog(e) : null);
    }

    function deliveryLog(e) {
      var list = state.deliveries[e.id];
      if (!list) return el('p', { class: 'muted', text: 'Loading…' });
      if (list.length === 0) return el('p', { class: 'empty deliveries-empty', text: 'No deliveries yet.' });
      var table = el('table', { class: 'deliveries' },
        el('thead', {}, el('tr', {}, ['Event', 'State', 'Tries', 'Last answer', ''].map(function (h, i) {
          return el('th', { scope: 'col' }, i === 4 ? el('span', { class: 'visually-hidden', text: 'Actions' }) : h);
        }))),
        el('tbody', {}, list.map(function (d) { return deliveryRow(e, d); })));
      return el('div', { class: 'table-wrap delivery-log' }, table);
    }

    function deliveryRow(e, d) {
      var last = d.attempts.length ? d.attempts[d.attempts.length - 1] : null;
      var answer = !last ? '—' : last.status ? 'HTTP ' + last.status : (last.error || 'no answer');
      var badge = d.status === 'delivered' ? ['badge-ok', 'Delivered'] : d.status === 'failed' ? ['badge-danger', 'Failed'] : d.attempts.length ? ['badge-warn', 'Retrying'] : ['badge', 'Pending'];
      var again = el('button', { type: 'button', class: 'button', text: 'Redeliver' });
      again.addEventListener('click', function () {
        endpointWrite(e, 'Redeliver', [again], 'POST', '/webhooks/' + encodeURIComponent(e.id) + '/deliveries/' + encodeURIComponent(d.id) + '/redeliver', function () {
          $('#status').textContent = 'Delivery of ' + d.eventType + ' sent again.';
        });
      });
      return el('tr', { data: { delivery: d.id, state: d.status } },
        el('td', {}, el('div', { class: 'mono', text: d.eventType }), el('div', { class: 'muted mono small', text: d.eventId }), el('div', { class: 'small' }, time(d.createdAt))),
        el('td', {}, el('span', { class: 'badge ' + badge[0], text: badge[1] })),
        el('td', { class: 'num', text: String(d.attempts.length) }),
        el('td', { class: 'wrap', text: answer }),
        el('td', { class: 'actions' }, again));
    }

    /**
     * A write on an endpoint or one of its deliveries, then a reload: its error is shown with the
     * endpoint (what: the act it names); the buttons stay busy until the reload draws them anew.
     */
    async function endpointWrite(e, what, buttons, method, path, done) {
      setBusy(buttons, true);
      state.pending += 1;
      try {
        await api(method, base + path, {});
        done();
      } catch (err) {
        if (sessionEnded(err)) return;
        state.errors[e.id] = what + ': ' + err.message;
      } finally {
        state.pending -= 1;
      }
      await load();
    }

    function removeEndpoint(e, buttons) {
      return endpointWrite(e, 'Remove', buttons, 'DELETE', '/webhooks/' + encodeURIComponent(e.id), function () {
        delete state.confirming[e.id];
        $('#status').textContent = 'Endpoint removed: ' + e.url;
      });
    }

    form.addEventListener('submit', async function (event) {
      event.preventDefault();
      var button = $('#webhook-add');
      var events = Array.prototype.map.call(form.querySelectorAll('input[name=event]:checked'), function (c) { return c.value; });
      $('#webhook-secret').hidden = true;
      // The button stays busy until the list shows the new endpoint.
      await submitForm(state, $('#webhook-error'), [button], 'POST', base + '/webhooks', { url: $('#webhook-url').value.trim(), events: events }, async function (made) {
        form.reset();
        var box = $('#webhook-secret');
        replace(box,
          el('p', {}, el('strong', { text: 'Signing secret for ' + made.url }), ' (shown this once: store it with the receiver, which checks each svc-signature with it)'),
          el('code', { class: 'secret', id: 'webhook-secret-value', text: made.secret }));
        box.hidden = false;
        $('#status').textContent = 'Endpoint added.';
        await load();
      });
    });
    keepFresh(load, function () { return state.pending > 0; });
  }

`;
