import { keepFresh } from './console-page.js';
import { body, failureOf, $, el, replace, api, later, setBusy, time, type Data } from './helpers.js';
import { sessionEnded, submitForm, loadPart, drawList } from './sections-shared.js';

const base = '/api/w/' + encodeURIComponent(body.dataset.workspace ?? '');
const state: {
  endpoints: Data;
  deliveries: Record<string, Data>;
  open: Record<string, Data>;
  confirming: Record<string, Data>;
  errors: Record<string, Data>;
  pending: number;
} = { endpoints: null, deliveries: {}, open: {}, confirming: {}, errors: {}, pending: 0 };
let form: HTMLFormElement;

function load() {
  return loadPart(state, 'webhooks', async function () {
    state.endpoints = (await api('GET', base + '/webhooks')).data;
    const open = state.endpoints.filter(function (e: Data) {
      return state.open[e.id];
    });
    const logs = await Promise.allSettled(
      open.map(function (e: Data) {
        return api('GET', base + '/webhooks/' + encodeURIComponent(e.id) + '/deliveries');
      }),
    );
    logs.forEach(function (r: Data, i: Data) {
      if (r.status === 'fulfilled') {
        state.deliveries[open[i].id] = r.value.data;
        state.errors[open[i].id] = null;
      } else state.errors[open[i].id] = r.reason.message;
    });
    render();
  });
}

function render() {
  drawList(
    'webhooks',
    state.endpoints,
    el('p', {
      class: 'empty',
      id: 'webhooks-empty',
      text: 'No endpoints yet. Add one below to receive events as signed POST requests.',
    }),
    function (list: Data) {
      return el('ul', { class: 'endpoints', id: 'endpoint-list' }, list.map(endpointItem));
    },
  );
}

function endpointItem(e: Data) {
  const toggle = el('button', {
    type: 'button',
    class: 'button',
    'aria-expanded': state.open[e.id] ? 'true' : 'false',
    text: state.open[e.id] ? 'Hide deliveries' : 'Deliveries',
  });
  toggle.addEventListener('click', function () {
    state.open[e.id] = !state.open[e.id];
    if (state.open[e.id]) void load();
    else render();
  });
  let remove;
  if (state.confirming[e.id]) {
    const yes = el('button', { type: 'button', class: 'button button-danger', text: 'Remove' });
    const no = el('button', { type: 'button', class: 'button button-quiet', text: 'Keep' });
    yes.addEventListener('click', function () {
      void removeEndpoint(e, [yes, no]);
    });
    no.addEventListener('click', function () {
      delete state.confirming[e.id];
      render();
    });
    remove = el('span', { class: 'confirm' }, el('span', { class: 'muted', text: 'Remove this endpoint?' }), no, yes);
  } else {
    remove = el('button', { type: 'button', class: 'button button-outline-danger', text: 'Remove…' });
    remove.addEventListener('click', function () {
      state.confirming[e.id] = true;
      render();
    });
  }
  return el(
    'li',
    { class: 'endpoint', data: { endpoint: e.id } },
    el(
      'div',
      { class: 'endpoint-head' },
      el(
        'div',
        { class: 'endpoint-main' },
        el('div', { class: 'endpoint-url mono', text: e.url }),
        el(
          'div',
          { class: 'item-meta' },
          e.disabledAt
            ? el('span', { class: 'badge badge-danger', text: 'Disabled: deliveries kept failing' })
            : el('span', { class: 'badge badge-ok', text: 'Active' }),
          el('span', {}, 'Added ', time(e.createdAt)),
          el('span', { class: 'mono', text: e.id }),
        ),
        el(
          'div',
          {},
          e.events.map(function (t: Data) {
            return el('span', { class: 'tag', text: t });
          }),
        ),
      ),
      el('div', { class: 'endpoint-actions' }, toggle, remove),
    ),
    state.errors[e.id] ? el('p', { class: 'notice notice-error', role: 'alert', text: state.errors[e.id] }) : null,
    state.open[e.id] ? deliveryLog(e) : null,
  );
}

function deliveryLog(e: Data) {
  const list = state.deliveries[e.id];
  if (!list) return el('p', { class: 'muted', text: 'Loading…' });
  if (list.length === 0) return el('p', { class: 'empty deliveries-empty', text: 'No deliveries yet.' });
  const table = el(
    'table',
    { class: 'deliveries' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ['Event', 'State', 'Tries', 'Last answer', ''].map(function (h, i) {
          return el('th', { scope: 'col' }, i === 4 ? el('span', { class: 'visually-hidden', text: 'Actions' }) : h);
        }),
      ),
    ),
    el(
      'tbody',
      {},
      list.map(function (d: Data) {
        return deliveryRow(e, d);
      }),
    ),
  );
  return el('div', { class: 'table-wrap delivery-log' }, table);
}

function deliveryRow(e: Data, d: Data) {
  const last = d.attempts.length ? d.attempts[d.attempts.length - 1] : null;
  const answer = !last ? '—' : last.status ? 'HTTP ' + last.status : last.error || 'no answer';
  const badge =
    d.status === 'delivered'
      ? ['badge-ok', 'Delivered']
      : d.status === 'failed'
        ? ['badge-danger', 'Failed']
        : d.attempts.length
          ? ['badge-warn', 'Retrying']
          : ['badge', 'Pending'];
  const again = el('button', { type: 'button', class: 'button', text: 'Redeliver' });
  again.addEventListener('click', function () {
    void endpointWrite(
      e,
      'Redeliver',
      [again],
      'POST',
      '/webhooks/' + encodeURIComponent(e.id) + '/deliveries/' + encodeURIComponent(d.id) + '/redeliver',
      function () {
        $('#status').textContent = 'Delivery of ' + d.eventType + ' sent again.';
      },
    );
  });
  return el(
    'tr',
    { data: { delivery: d.id, state: d.status } },
    el(
      'td',
      {},
      el('div', { class: 'mono', text: d.eventType }),
      el('div', { class: 'muted mono small', text: d.eventId }),
      el('div', { class: 'small' }, time(d.createdAt)),
    ),
    el('td', {}, el('span', { class: 'badge ' + badge[0], text: badge[1] })),
    el('td', { class: 'num', text: String(d.attempts.length) }),
    el('td', { class: 'wrap', text: answer }),
    el('td', { class: 'actions' }, again),
  );
}

/**
 * A write on an endpoint or one of its deliveries, then a reload: its error is shown with the
 * endpoint (what: the act it names); the buttons stay busy until the reload draws them anew.
 */
async function endpointWrite(e: Data, what: Data, buttons: Data, method: Data, path: Data, done: Data) {
  setBusy(buttons, true);
  state.pending += 1;
  try {
    await api(method, base + path, {});
    done();
  } catch (caught) {
    const err = failureOf(caught);
    if (sessionEnded(err)) return;
    state.errors[e.id] = what + ': ' + err.message;
  } finally {
    state.pending -= 1;
  }
  await load();
}

function removeEndpoint(e: Data, buttons: Data) {
  return endpointWrite(e, 'Remove', buttons, 'DELETE', '/webhooks/' + encodeURIComponent(e.id), function () {
    delete state.confirming[e.id];
    $('#status').textContent = 'Endpoint removed: ' + e.url;
  });
}

/**
 * The webhooks section (/console/webhooks): the workspace's endpoints with their events, each
 * with its delivery log (newest first: event, state, tries with the receiver's status or error)
 * and a redelivery per delivery; adding an endpoint shows its signing secret once; removing one
 * asks to confirm in place. A delivery log that is open stays open across refreshes.
 */
export function section_webhooks() {
  form = $<HTMLFormElement>('#webhook-form');

  form.addEventListener(
    'submit',
    later(async function (event) {
      event.preventDefault();
      const button = $<HTMLButtonElement>('#webhook-add');
      const events = Array.prototype.map.call(form.querySelectorAll('input[name=event]:checked'), function (c) {
        return c.value;
      });
      $('#webhook-secret').hidden = true;
      // The button stays busy until the list shows the new endpoint.
      await submitForm(
        state,
        $('#webhook-error'),
        [button],
        'POST',
        base + '/webhooks',
        { url: $<HTMLInputElement>('#webhook-url').value.trim(), events: events },
        async function (made: Data) {
          form.reset();
          const box = $('#webhook-secret');
          replace(
            box,
            el(
              'p',
              {},
              el('strong', { text: 'Signing secret for ' + made.url }),
              ' (shown this once: store it with the receiver, which checks each svc-signature with it)',
            ),
            el('code', { class: 'secret', id: 'webhook-secret-value', text: made.secret }),
          );
          box.hidden = false;
          $('#status').textContent = 'Endpoint added.';
          await load();
        },
      );
    }),
  );
  keepFresh(load, function () {
    return state.pending > 0;
  });
}
