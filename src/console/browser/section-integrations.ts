import { clock } from './text.js';
import { keepFresh } from './console-page.js';
import { body, failureOf, $, el, replace, api, time, type Data } from './helpers.js';
import type { IntegrationKind } from '../../integrations/kinds.js';
/**
 * The integrations section (/console/integrations): each integration set up, where its provider
 * sends (this origin's /v1/hooks/… address), its secrets (created, retiring), its plain settings,
 * and the inbound requests it refused since the server started (bad or missing signature, a body
 * that is not the provider's, an event too old): a count that grows while someone sends with a
 * wrong or leaked secret.
 */
export function section_integrations() {
  const wid = body.dataset.workspace;
  const base = '/api/w/' + encodeURIComponent(wid ?? '');
  const state: { pending: number } = { pending: 0 };
  const NAMES: Record<string, string> = {
    issuer: 'Card issuer',
    stripe: 'Stripe',
    github: 'GitHub',
    slack: 'Slack',
    'chat-relay': 'Chat relay',
    ssf: 'Identity provider (SSF)',
    acp: 'Merchant checkout events (ACP)',
  } satisfies Record<IntegrationKind, string>;

  function hookUrl(kind: Data) {
    return window.location.origin + '/v1/hooks/' + kind + (kind === 'slack' ? '' : '/' + encodeURIComponent(wid ?? ''));
  }

  async function load() {
    state.pending += 1;
    try {
      render((await api('GET', base + '/integrations')).data);
      $('#updated').textContent = 'Updated ' + clock(new Date());
    } catch (caught) {
      const err = failureOf(caught);
      if (err && err.status === 401) {
        window.location.assign('/login');
        return;
      }
      replace($('#integrations-body'), el('p', { class: 'notice notice-error', role: 'alert', text: err.message }));
    } finally {
      state.pending -= 1;
    }
  }

  function render(list: Data) {
    $('#integrations-count').textContent = list.length ? String(list.length) : '';
    if (list.length === 0) {
      replace(
        $('#integrations-body'),
        el('p', { class: 'empty', id: 'integrations-empty' }, 'No integration is set up. Set one up below.'),
      );
      return;
    }
    replace(
      $('#integrations-body'),
      el('ul', { class: 'integrations', id: 'integration-list' }, list.map(item)),
      el('p', {
        class: 'hint',
        text: 'Refused: inbound requests answered with an error since the server started (a wrong or missing signature, a body that is not the provider\u2019s, a replayed or stale event).',
      }),
    );
  }

  function item(i: Data) {
    const now = Date.now();
    const secrets = i.secrets.length
      ? el(
          'ul',
          { class: 'plain' },
          i.secrets.map(function (s: Data) {
            const retired = s.retiresAt && Date.parse(s.retiresAt) <= now;
            return el(
              'li',
              {},
              'Created ',
              time(s.createdAt),
              s.retiresAt
                ? el(
                    'span',
                    { class: retired ? 'muted' : 'badge badge-warn' },
                    retired ? ' · retired' : 'retires ',
                    retired ? null : time(s.retiresAt),
                  )
                : null,
            );
          }),
        )
      : el('span', { class: 'muted', text: i.kind === 'ssf' ? 'public keys only' : '—' });
    const settings = Object.keys(i.config).filter(function (k) {
      return i.config[k] !== null && i.config[k] !== undefined;
    });
    const facts = [
      [el('dt', { text: 'Sends to' }), el('dd', { class: 'mono wrap', text: hookUrl(i.kind) })],
      [el('dt', { text: 'Secrets' }), el('dd', {}, secrets)],
      settings.map(function (k) {
        const v = i.config[k];
        return [
          el('dt', { text: k }),
          el('dd', { class: 'mono wrap', text: typeof v === 'string' ? v : JSON.stringify(v) }),
        ];
      }),
      i.sealedSettings.map(function (k: Data) {
        return [el('dt', { text: k }), el('dd', { class: 'muted', text: 'set (sealed)' })];
      }),
    ];
    return el(
      'li',
      { class: 'integration', data: { kind: i.kind } },
      el(
        'div',
        { class: 'integration-head' },
        el(
          'div',
          {},
          el('div', { class: 'item-title', text: NAMES[i.kind] || i.kind }),
          el('div', { class: 'muted small' }, 'Updated ', time(i.updatedAt)),
        ),
        el(
          'div',
          { class: 'refusals' + (i.refused ? ' has-refusals' : '') },
          el('span', { class: 'refused', text: String(i.refused) }),
          ' refused',
        ),
      ),
      el('dl', { class: 'facts' }, facts),
    );
  }

  keepFresh(load, function () {
    return state.pending > 0;
  });
}
