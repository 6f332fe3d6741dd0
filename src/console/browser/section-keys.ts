import { keepFresh } from './console-page.js';
import { $, find, el, replace, showNotice, later, time, type Data } from './helpers.js';
import {
  workspaceContext,
  say,
  sessionEnded,
  listAll,
  itemWriter,
  submitForm,
  stackTable,
  updated,
  secretOnce,
  confirmButton,
} from './sections-shared.js';

const ctx = workspaceContext();
const hasKeys = Boolean(find('#workspace-keys'));
const hasTokens = Boolean(find('#service-tokens'));
const state: {
  keys: Data;
  tokens: Data;
  agents: Record<string, Data>;
  errors: Record<string, Data>;
  pending: number;
} = { keys: null, tokens: null, agents: {}, errors: {}, pending: 0 };
const itemErrors: Record<string, Data> = {};
let showRevoked = false;

async function load() {
  state.pending += 1;
  try {
    const results = await Promise.allSettled([
      hasKeys ? listAll(ctx.base + '/keys') : Promise.resolve(null),
      hasTokens ? listAll(ctx.base + '/service-tokens') : Promise.resolve(null),
      hasKeys
        ? listAll(ctx.base + '/agents').catch(function () {
            return [];
          })
        : Promise.resolve([]),
    ]);
    if (
      results.some(function (r) {
        return r.status === 'rejected' && sessionEnded(r.reason);
      })
    )
      return;
    (['keys', 'tokens'] as const).forEach(function (k, i) {
      const r = results[i];
      if (!r) return;
      if (r.status === 'fulfilled') {
        state[k] = r.value;
        state.errors[k] = null;
      } else state.errors[k] = r.reason.message;
    });
    (results[2]?.status === 'fulfilled' ? results[2].value : []).forEach(function (a: Data) {
      state.agents[a.id] = a.name;
    });
    if (hasKeys) renderKeys();
    if (hasTokens) renderTokens();
    updated();
  } finally {
    state.pending -= 1;
  }
}

const write = itemWriter({ base: ctx.base, state: state, itemErrors: itemErrors, load: load });

function errorLine(key: Data) {
  return itemErrors[key]
    ? el('p', { class: 'notice notice-error item-error', role: 'alert', text: itemErrors[key] })
    : null;
}

function sectionError(k: Data) {
  return state.errors[k] ? el('p', { class: 'notice notice-error', role: 'alert', text: state.errors[k] }) : null;
}

// -- workspace keys --

function renderKeys() {
  const target = $('#keys-body');
  if (!state.keys) {
    replace(target, sectionError('keys'));
    return;
  }
  const live = state.keys.filter(function (k: Data) {
    return !k.revokedAt;
  });
  const list = showRevoked ? state.keys : live;
  $('#keys-count').textContent = live.length ? String(live.length) : '';
  if (!list.length) {
    replace(target, el('p', { class: 'empty', text: 'No keys yet.' }), sectionError('keys'));
    return;
  }
  replace(target, stackTable(['Key', 'Scope', 'Minted', null], list.map(keyRow)), sectionError('keys'));
}

function keyRow(k: Data) {
  const label = k.name || (k.agentId ? 'Key of ' + (state.agents[k.agentId] || k.agentId) : 'Unnamed key');
  const about: Data[] = [];
  if (k.agentId) about.push('agent ' + (state.agents[k.agentId] || k.agentId));
  if (k.team) about.push('team ' + k.team);
  if (k.principal) about.push('for ' + k.principal);
  const actions = k.revokedAt
    ? el('span', { class: 'badge', text: 'Revoked' })
    : confirmButton('Revoke', 'Revoke key', function (buttons: Data) {
        void write(
          'key:' + k.id,
          'Revoke “' + label + '”',
          buttons,
          'DELETE',
          '/keys/' + encodeURIComponent(k.id),
          undefined,
          function () {
            say('Key revoked: ' + label);
          },
        );
      });
  return el(
    'tr',
    { data: { key: k.id } },
    el(
      'td',
      { 'data-label': 'Key' },
      el('div', { class: 'agent-name', text: label }),
      el('div', { class: 'muted mono', text: k.id }),
      about.length ? el('div', { class: 'muted', text: about.join(' · ') }) : null,
    ),
    el(
      'td',
      { 'data-label': 'Scope' },
      el('span', { class: 'badge ' + (k.scope === 'admin' ? 'badge-warn' : 'badge-neutral'), text: k.scope }),
    ),
    el(
      'td',
      { 'data-label': 'Minted' },
      time(k.createdAt),
      k.revokedAt ? el('div', { class: 'muted' }, 'revoked ', time(k.revokedAt)) : null,
    ),
    el('td', { class: 'actions', 'data-label': 'Actions' }, actions, errorLine('key:' + k.id)),
  );
}

function wireKeys() {
  const box = $<HTMLInputElement>('#keys-show-revoked');
  box.addEventListener('change', function () {
    showRevoked = box.checked;
    renderKeys();
  });
  const form = $('#key-new-form');
  form.addEventListener(
    'submit',
    later(async function (event) {
      event.preventDefault();
      const error = $('#key-new-error');
      const payload: Record<string, unknown> = { scope: $<HTMLInputElement>('#key-new-scope').value };
      const name = $<HTMLInputElement>('#key-new-name').value.trim();
      const team = $<HTMLInputElement>('#key-new-team').value.trim();
      if (!name) {
        showNotice(error, 'Name the key after what uses it: the ledger and the usage reports show it.');
        $('#key-new-name').focus();
        return;
      }
      payload.name = name;
      if (team) payload.team = team;
      await submitForm(
        state,
        error,
        [$<HTMLButtonElement>('#key-new-submit')],
        'POST',
        ctx.base + '/keys',
        payload,
        function (made: Data) {
          $<HTMLInputElement>('#key-new-name').value = '';
          $<HTMLInputElement>('#key-new-team').value = '';
          replace($('#keys-secret'), secretOnce('New ' + made.scope + ' key ' + (made.name || made.id), made.key));
          say('Key minted: ' + (made.name || made.id));
        },
        load,
      );
    }),
  );
}

// -- service tokens --

function renderTokens() {
  const target = $('#tokens-body');
  if (!state.tokens) {
    replace(target, sectionError('tokens'));
    return;
  }
  const live = state.tokens.filter(function (tk: Data) {
    return !tk.revokedAt;
  });
  $('#tokens-count').textContent = live.length ? String(live.length) : '';
  if (!live.length) {
    replace(target, el('p', { class: 'empty', text: 'No service tokens.' }), sectionError('tokens'));
    return;
  }
  replace(target, stackTable(['Token', 'Scopes', 'Expires', null], live.map(tokenRow)), sectionError('tokens'));
}

function tokenRow(tk: Data) {
  const expired = Date.parse(tk.expiresAt) <= Date.now();
  const revoke = confirmButton('Revoke', 'Revoke token', function (buttons: Data) {
    void write(
      'token:' + tk.id,
      'Revoke “' + tk.name + '”',
      buttons,
      'DELETE',
      '/service-tokens/' + encodeURIComponent(tk.id),
      undefined,
      function () {
        say('Token revoked: ' + tk.name);
      },
    );
  });
  return el(
    'tr',
    { data: { token: tk.id } },
    el(
      'td',
      { 'data-label': 'Token' },
      el('div', { class: 'agent-name', text: tk.name }),
      el('div', { class: 'muted mono', text: tk.id }),
      (tk.ipAllow || []).length ? el('div', { class: 'muted', text: 'From ' + tk.ipAllow.join(', ') }) : null,
    ),
    el(
      'td',
      { 'data-label': 'Scopes' },
      (tk.scopes || []).map(function (s: Data) {
        return el('span', { class: 'tag', text: s });
      }),
    ),
    el(
      'td',
      { 'data-label': 'Expires' },
      expired ? el('span', { class: 'badge badge-danger', text: 'Expired' }) : null,
      ' ',
      time(tk.expiresAt),
    ),
    el('td', { class: 'actions', 'data-label': 'Actions' }, revoke, errorLine('token:' + tk.id)),
  );
}

function wireTokens() {
  const form = $('#token-new-form');
  form.addEventListener(
    'submit',
    later(async function (event) {
      event.preventDefault();
      const error = $('#token-new-error');
      const name = $<HTMLInputElement>('#token-new-name').value.trim();
      const days = Number($<HTMLInputElement>('#token-new-days').value);
      const scopes = Array.prototype.slice
        .call(form.querySelectorAll('input[name=token-scope]:checked'))
        .map(function (b) {
          return b.value;
        });
      const ip = $<HTMLInputElement>('#token-new-ip')
        .value.split(/[\s,]+/)
        .filter(Boolean);
      if (!name) {
        showNotice(error, 'Name the token (one word): the ledger names it by it.');
        $('#token-new-name').focus();
        return;
      }
      if (!scopes.length) {
        showNotice(error, 'Choose at least one scope.');
        return;
      }
      const payload: Record<string, unknown> = { name: name, scopes: scopes, expiresInDays: days };
      if (ip.length) payload.ipAllow = ip;
      await submitForm(
        state,
        error,
        [$<HTMLButtonElement>('#token-new-submit')],
        'POST',
        ctx.base + '/service-tokens',
        payload,
        function (made: Data) {
          $<HTMLInputElement>('#token-new-name').value = '';
          $<HTMLInputElement>('#token-new-ip').value = '';
          form.querySelectorAll<HTMLInputElement>('input[name=token-scope]').forEach(function (b) {
            b.checked = false;
          });
          replace($('#tokens-secret'), secretOnce('New service token ' + made.name, made.token));
          say('Token created: ' + made.name);
        },
        load,
      );
    }),
  );
}

/**
 * The keys section (/console/keys) in the browser: workspace keys (list, mint, revoke) and
 * service tokens (list, create, revoke); a new value is shown once, with Copy, and never kept.
 */
export function section_keys() {
  if (hasKeys) wireKeys();
  if (hasTokens) wireTokens();
  keepFresh(load, function () {
    return state.pending > 0;
  });
}
