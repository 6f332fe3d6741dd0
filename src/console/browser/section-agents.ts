import { ruleText, actorName } from './text.js';
import { keepFresh } from './console-page.js';
import {
  failureOf,
  $,
  find,
  el,
  append,
  replace,
  api,
  showNotice,
  later,
  setBusy,
  time,
  type Data,
} from './helpers.js';
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
let root: HTMLElement;
let canManage: boolean;
let canManageAll: boolean;
const state: {
  agents: Data[] | null;
  blueprints: Data[];
  templates: Data[] | null;
  people: Record<string, string>;
  members: Data[];
  error: string | null;
  pending: number;
  detail: {
    agentId: string;
    mayManage: boolean;
    mandate: Data;
    keys: Data;
    holderKey: Data;
    error: string | null;
  } | null;
} = {
  agents: null,
  blueprints: [],
  templates: null,
  people: {},
  members: [],
  error: null,
  pending: 0,
  detail: null,
};
// What the person typed or opened, kept across reloads.
const drafts: { reasons: Record<string, Data>; keyName: string; rules: Data; broaden: Data } = {
  reasons: {},
  keyName: '',
  rules: null,
  broaden: null,
};
const acting: Record<string, 'stop' | 'restart'> = {}; // agentId -> 'stop' | 'restart'
const itemErrors: Record<string, string | null> = {};
let minted: Data = null; // { agentId, id, key }: shown once, until Done

function selected() {
  const id = window.location.hash.slice(1);
  return /^agt_[0-9A-Za-z]{22}$/.test(id) ? id : null;
}

function findAgent(id: string): Data {
  const list = state.agents || [];
  for (let i = 0; i < list.length; i += 1) if (list[i].id === id) return list[i];
  return null;
}

async function load() {
  state.pending += 1;
  try {
    const results = await Promise.allSettled([
      listAll(ctx.base + '/agents'),
      canManage ? listAll(ctx.base + '/blueprints') : Promise.resolve([]),
      canManageAll ? listAll(ctx.base + '/members') : Promise.resolve([]),
    ]);
    if (
      results.some(function (r) {
        return r.status === 'rejected' && sessionEnded(r.reason);
      })
    )
      return;
    if (results[0].status === 'fulfilled') {
      state.agents = results[0].value;
      state.error = null;
    } else state.error = results[0].reason.message;
    if (results[1].status === 'fulfilled') state.blueprints = results[1].value;
    if (results[2].status === 'fulfilled') {
      state.members = results[2].value;
      state.members.forEach(function (m) {
        state.people[m.id] = m.name || m.email;
      });
    }
    renderList();
    renderCreate();
    await loadDetail();
    updated();
  } finally {
    state.pending -= 1;
  }
}

async function loadDetail() {
  const id = selected();
  const card = $('#agent-detail');
  if (!id) {
    card.hidden = true;
    state.detail = null;
    return;
  }
  const agent = findAgent(id);
  card.hidden = false;
  if (!agent) {
    state.detail = null;
    $('#agent-detail-title').textContent = 'Agent';
    replace(
      $('#agent-detail-body'),
      el('p', {
        class: 'notice notice-error',
        role: 'alert',
        text: state.agents ? 'No such agent among those you see.' : 'Loading…',
      }),
    );
    return;
  }
  const mayManage = canManage && (canManageAll || agent.actsFor === ctx.me);
  const results = await Promise.allSettled([
    mayManage ? api('GET', ctx.base + '/agents/' + encodeURIComponent(id) + '/mandate') : Promise.resolve(null),
    mayManage ? api('GET', ctx.base + '/agents/' + encodeURIComponent(id) + '/keys') : Promise.resolve(null),
    mayManage && !state.templates ? listAll(ctx.base + '/templates') : Promise.resolve(state.templates),
    mayManage ? api('GET', ctx.base + '/agents/' + encodeURIComponent(id) + '/ap2/holder-key') : Promise.resolve(null),
  ]);
  if (
    results.some(function (r) {
      return r.status === 'rejected' && sessionEnded(r.reason);
    })
  )
    return;
  if (state.detail && state.detail.agentId !== id) {
    drafts.rules = null;
    drafts.broaden = null;
  }
  state.detail = {
    agentId: id,
    mayManage: mayManage,
    mandate: results[0]?.status === 'fulfilled' ? results[0].value : null,
    keys: results[1]?.status === 'fulfilled' ? results[1].value : null,
    holderKey: results[3]?.status === 'fulfilled' ? results[3].value : null,
    error:
      results
        .filter(function (r) {
          return r.status === 'rejected';
        })
        .map(function (r) {
          return r.reason.message;
        })[0] || null,
  };
  if (results[2]?.status === 'fulfilled') state.templates = results[2].value;
  renderDetail();
}

/** One write, then a reload; its error is shown beside what it concerns (key), else on the page. */
const write = itemWriter({ base: ctx.base, state: state, itemErrors: itemErrors, load: load });

function errorLine(key: string) {
  return itemErrors[key]
    ? el('p', { class: 'notice notice-error item-error', role: 'alert', text: itemErrors[key] })
    : null;
}

function personName(id: string | null | undefined) {
  if (!id) return 'nobody';
  if (id === ctx.me) return 'you';
  return state.people[id] || id;
}

// -- the list --

function renderList() {
  const target = $('#agents-body');
  const count = $('#agents-count');
  if (state.error && !state.agents) {
    count.textContent = '';
    replace(target, el('p', { class: 'notice notice-error', role: 'alert', text: state.error }));
    return;
  }
  const list = state.agents || [];
  count.textContent = list.length ? String(list.length) : '';
  if (!list.length) {
    const none = canManage
      ? 'No agents yet. Create one below.'
      : root.dataset.readsAll === 'true'
        ? 'No agents yet.'
        : 'No agents act for you.';
    replace(target, el('p', { class: 'empty', text: none }));
    return;
  }
  replace(
    target,
    stackTable(['Agent', 'Acts for', 'Standing', null], list.map(agentRow)),
    state.error ? el('p', { class: 'notice notice-error', role: 'alert', text: state.error }) : null,
  );
}

function holdsList(agent: Data) {
  const holds = agent.holds || [];
  if (!holds.length) return null;
  return el(
    'ul',
    { class: 'holds' },
    holds.map(function (h: Data) {
      return el(
        'li',
        {},
        el('strong', { text: h.hold === 'workspace' ? 'every agent' : h.hold }),
        h.reason ? ' · ' + h.reason : null,
        ' · by ' + actorName(h.by, ctx.me, state.people) + ' ',
        h.at ? time(h.at) : null,
      );
    }),
  );
}

function agentRow(agent: Data) {
  const stopped = agent.status === 'stopped';
  const open = el('a', { href: '#' + agent.id, class: 'agent-name', text: agent.name });
  const name = el(
    'td',
    { 'data-label': 'Agent' },
    open,
    el('div', { class: 'muted mono', text: agent.id }),
    (agent.tags || []).length
      ? el(
          'div',
          {},
          agent.tags.map(function (t: Data) {
            return el('span', { class: 'tag', text: t });
          }),
        )
      : null,
  );
  const standing = el(
    'td',
    { 'data-label': 'Standing' },
    el('span', { class: 'badge ' + (stopped ? 'badge-danger' : 'badge-ok'), text: stopped ? 'Stopped' : 'Running' }),
    holdsList(agent),
  );
  const actions = el('td', { class: 'actions', 'data-label': 'Actions' }, standingActions(agent), errorLine(agent.id));
  return el(
    'tr',
    { data: { agent: agent.id }, class: agent.id === selected() ? 'selected' : null },
    name,
    el('td', { 'data-label': 'Acts for', text: personName(agent.actsFor) }),
    standing,
    actions,
  );
}

/** Stop with a reason; restart with a reason (the person it acts for, owners and admins). */
function standingActions(agent: Data, inDetail?: boolean) {
  const mayStop = canManage && (canManageAll || agent.actsFor === ctx.me);
  const mayRestart = canManageAll || agent.actsFor === ctx.me;
  const ownHolds = (agent.holds || []).filter(function (h: Data) {
    return h.hold !== 'workspace';
  });
  const held = ownHolds.some(function (h: Data) {
    return h.hold === 'owner';
  });
  const mode = acting[agent.id];
  if (mode) return reasonForm(agent, mode);
  const acts = { 'data-acts-for': agent.actsFor || '' };
  const buttons: HTMLElement[] = inDetail
    ? []
    : [el('a', { href: '#' + agent.id, class: 'button', text: 'Open', 'data-permission': 'workspace.read' })];
  if (mayStop && !held) {
    const stop = el('button', {
      type: 'button',
      class: 'button button-outline-danger',
      text: 'Stop…',
      'data-permission': 'agents.manage',
      ...acts,
    });
    stop.addEventListener('click', function () {
      acting[agent.id] = 'stop';
      itemErrors[agent.id] = null;
      rerender();
    });
    buttons.push(stop);
  }
  if (mayRestart && ownHolds.length) {
    const restart = el('button', {
      type: 'button',
      class: 'button',
      text: 'Restart…',
      'data-permission': 'workspace.read',
      ...acts,
    });
    restart.addEventListener('click', function () {
      acting[agent.id] = 'restart';
      itemErrors[agent.id] = null;
      rerender();
    });
    buttons.push(restart);
  }
  return el('div', { class: 'inline-form' }, buttons);
}

function reasonForm(agent: Data, mode: Data) {
  const key = mode + ':' + agent.id;
  const stop = mode === 'stop';
  const reason = el('input', {
    type: 'text',
    maxlength: '500',
    placeholder: 'Reason (required)',
    'aria-label': (stop ? 'Reason for stopping ' : 'Reason for restarting ') + agent.name,
    value: drafts.reasons[key] || '',
  });
  reason.addEventListener('input', function () {
    drafts.reasons[key] = reason.value;
  });
  const confirm = el('button', {
    type: 'submit',
    class: 'button ' + (stop ? 'button-danger' : 'button-primary'),
    text: stop ? 'Stop agent' : 'Restart agent',
  });
  const cancel = el('button', { type: 'button', class: 'button button-quiet', text: 'Cancel' });
  cancel.addEventListener('click', function () {
    delete acting[agent.id];
    itemErrors[agent.id] = null;
    rerender();
  });
  // Stopping manages the agent; restarting is the person it acts for's, an owner's or an admin's.
  const form = el(
    'form',
    {
      class: 'inline-form',
      novalidate: true,
      'data-permission': stop ? 'agents.manage' : 'workspace.read',
      'data-acts-for': agent.actsFor || '',
    },
    reason,
    cancel,
    confirm,
  );
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    const text = reason.value.trim();
    if (!text) {
      itemErrors[agent.id] = 'Give a reason: it is recorded in the ledger with your name.';
      rerender();
      return;
    }
    const path = '/agents/' + encodeURIComponent(agent.id) + (stop ? '/stop' : '/restart');
    void write(
      agent.id,
      (stop ? 'Stop “' : 'Restart “') + agent.name + '”',
      [confirm, cancel],
      'POST',
      path,
      { reason: text },
      function () {
        delete acting[agent.id];
        delete drafts.reasons[key];
        say((stop ? 'Stopped: ' : 'Restarted: ') + agent.name);
      },
    );
  });
  window.setTimeout(function () {
    if (document.activeElement === document.body) reason.focus();
  }, 0);
  return form;
}

function rerender() {
  renderList();
  renderDetail();
}

// -- a new agent --

function renderCreate() {
  const select = find<HTMLSelectElement>('#agent-new-blueprint');
  if (!select) return;
  const chosen = select.value;
  replace(
    select,
    el('option', { value: '', text: 'None: no mandate yet' }),
    state.blueprints.map(function (b) {
      return el('option', {
        value: b.id,
        text: b.name + ((b.tags || []).length ? ' (' + b.tags.join(', ') + ')' : ''),
      });
    }),
  );
  select.value = chosen;
  const person = find<HTMLSelectElement>('#agent-new-acts-for');
  if (person) {
    const who = person.value || ctx.me;
    replace(
      person,
      state.members.map(function (m) {
        return el('option', {
          value: m.id,
          text: m.id === ctx.me ? 'You' : (m.name || m.email) + ' (' + m.role + ')',
        });
      }),
      el('option', { value: 'nobody', text: 'Nobody' }),
    );
    if (!state.members.length) append(person, el('option', { value: ctx.me, text: 'You' }));
    person.value = who;
  }
}

function wireCreate() {
  const form = find<HTMLFormElement>('#agent-new-form');
  if (!form) return;
  form.addEventListener(
    'submit',
    later(async function (event) {
      event.preventDefault();
      const name = $<HTMLInputElement>('#agent-new-name').value.trim();
      const error = $('#agent-new-error');
      if (!name) {
        showNotice(error, 'Give the agent a name.');
        $('#agent-new-name').focus();
        return;
      }
      const payload: Record<string, unknown> = { name: name };
      const blueprint = $<HTMLInputElement>('#agent-new-blueprint').value;
      if (blueprint) payload.blueprint = blueprint;
      const person = find<HTMLSelectElement>('#agent-new-acts-for');
      if (person) payload.actsFor = person.value === 'nobody' ? null : person.value;
      await submitForm(
        state,
        error,
        [$<HTMLButtonElement>('#agent-new-submit')],
        'POST',
        ctx.base + '/agents',
        payload,
        function (agent: Data) {
          $<HTMLInputElement>('#agent-new-name').value = '';
          say('Created: ' + agent.name);
          window.location.hash = agent.id;
        },
        load,
      );
    }),
  );
}

// -- one agent --

function renderDetail() {
  const id = selected();
  const d = state.detail;
  if (!id || !d || d.agentId !== id) return;
  const agent = findAgent(id);
  if (!agent) return;
  $('#agent-detail-title').textContent = agent.name;
  const stopped = agent.status === 'stopped';
  const facts = el(
    'dl',
    { class: 'facts' },
    el('dt', { text: 'Id' }),
    el('dd', { class: 'mono', text: agent.id }),
    el('dt', { text: 'Acts for' }),
    el('dd', { text: personName(agent.actsFor) }),
    el('dt', { text: 'Blueprint' }),
    el('dd', { text: blueprintName(agent.blueprint) }),
    el('dt', { text: 'Tags' }),
    el('dd', { text: (agent.tags || []).join(', ') || '—' }),
    el('dt', { text: 'Created' }),
    el('dd', {}, time(agent.createdAt)),
  );
  const standing = el(
    'div',
    { class: 'detail-part', id: 'agent-standing' },
    el('h3', { text: 'Standing' }),
    el(
      'p',
      {},
      el('span', {
        class: 'badge ' + (stopped ? 'badge-danger' : 'badge-ok'),
        text: stopped ? 'Stopped' : 'Running',
      }),
    ),
    holdsList(agent),
    standingActions(agent, true),
    errorLine(agent.id),
  );
  replace(
    $('#agent-detail-body'),
    d.error ? el('p', { class: 'notice notice-error', role: 'alert', text: d.error }) : null,
    el('div', { class: 'detail-grid' }, facts, standing),
    d.mayManage
      ? mandatePart(agent, d)
      : el('p', {
          class: 'hint',
          text: 'Its mandate and keys are managed by the person it acts for, an owner or an admin.',
        }),
    d.mayManage ? keysPart(agent, d) : null,
    d.mayManage ? holderKeyPart(d) : null,
  );
}

/** The public key the agent holds for AP2 mandates (docs/ap2.md#the-agents-holder-key), read only. */
function holderKeyPart(d: Data) {
  const key = d.holderKey;
  return el(
    'section',
    { class: 'holder-key' },
    el('h3', { text: 'AP2 holder key' }),
    key && key.thumbprint
      ? el(
          'p',
          {},
          'Thumbprint ',
          el('span', { class: 'mono', text: key.thumbprint }),
          key.registeredAt ? ' · registered ' : null,
          key.registeredAt ? time(key.registeredAt) : null,
        )
      : el('p', {
          class: 'hint',
          text: 'None registered: AP2 mandates are bound to a key the agent holds; register its public key first.',
        }),
  );
}

function blueprintName(id: Data) {
  if (!id) return '—';
  for (let i = 0; i < state.blueprints.length; i += 1)
    if (state.blueprints[i].id === id) return state.blueprints[i].name;
  return id;
}

function sameRule(a: Data, b: Data) {
  const strip = function (r: Data) {
    const c: Record<string, unknown> = {};
    Object.keys(r)
      .sort()
      .forEach(function (k) {
        if (k !== 'id') c[k] = r[k];
      });
    return JSON.stringify(c);
  };
  return strip(a) === strip(b);
}

function mandatePart(agent: Data, d: Data) {
  const saved = d.mandate ? d.mandate.rules : [];
  const rules = drafts.rules || saved;
  const changed = drafts.rules !== null;
  const items = rules.length
    ? el(
        'ul',
        { class: 'rules' },
        rules.map(function (rule: Data, i: Data) {
          const remove = el('button', {
            type: 'button',
            class: 'button button-quiet',
            text: 'Remove',
            'aria-label': 'Remove rule ' + (i + 1),
          });
          remove.addEventListener('click', function () {
            drafts.rules = rules.filter(function (_r: Data, j: Data) {
              return j !== i;
            });
            drafts.broaden = null;
            renderDetail();
          });
          return el(
            'li',
            { class: 'rule' },
            el('span', { class: 'rule-text', text: ruleText(rule) }),
            rule.id
              ? el('span', { class: 'muted mono rule-id', text: rule.id })
              : el('span', { class: 'badge badge-warn', text: 'new' }),
            remove,
          );
        }),
      )
    : el('p', { class: 'empty', text: 'No rules: every action this agent asks for is denied.' });
  const templates = state.templates || [];
  const picker = templates.length
    ? el(
        'ul',
        { class: 'templates' },
        templates.map(function (tpl) {
          const fresh = (tpl.rules || []).filter(function (r: Data) {
            return !rules.some(function (x: Data) {
              return sameRule(x, r);
            });
          });
          const add = el('button', {
            type: 'button',
            class: 'button',
            text: fresh.length ? 'Add its rules' : 'Added',
            disabled: !fresh.length,
          });
          add.addEventListener('click', function () {
            drafts.rules = rules.concat(
              fresh.map(function (r: Data) {
                const c: Record<string, unknown> = {};
                Object.keys(r).forEach(function (k) {
                  if (k !== 'id') c[k] = r[k];
                });
                return c;
              }),
            );
            drafts.broaden = null;
            renderDetail();
          });
          return el(
            'li',
            { class: 'template', data: { template: tpl.id } },
            el(
              'div',
              {},
              el('strong', { text: tpl.name }),
              el(
                'ul',
                { class: 'template-rules' },
                (tpl.rules || []).map(function (r: Data) {
                  return el('li', { text: ruleText(r) });
                }),
              ),
            ),
            add,
          );
        }),
      )
    : el(
        'p',
        { class: 'hint' },
        'The workspace has no templates yet: an owner or an admin writes them on the ',
        el('a', { href: '/console/templates?w=' + encodeURIComponent(ctx.wid), text: 'Templates' }),
        ' page.',
      );
  let actions: Data = null;
  if (changed) {
    const save = el('button', { type: 'button', class: 'button button-primary', text: 'Save mandate' });
    const discard = el('button', { type: 'button', class: 'button button-quiet', text: 'Discard changes' });
    discard.addEventListener('click', function () {
      drafts.rules = null;
      drafts.broaden = null;
      itemErrors.mandate = null;
      renderDetail();
    });
    save.addEventListener('click', function () {
      void saveMandate(agent, rules, false, [save, discard]);
    });
    actions = el('div', { class: 'inline-form' }, discard, save);
  }
  let broaden: Data = null;
  if (drafts.broaden) {
    const anyway = el('button', { type: 'button', class: 'button button-danger', text: 'Save anyway' });
    anyway.addEventListener('click', function () {
      void saveMandate(agent, rules, true, [anyway]);
    });
    broaden = el('div', { class: 'notice', role: 'alert' }, el('p', { text: drafts.broaden }), anyway);
  }
  return el(
    'div',
    {
      class: 'detail-part',
      id: 'agent-mandate',
      'data-permission': 'agents.manage',
      'data-acts-for': agent.actsFor || '',
    },
    el('h3', { text: 'Mandate' }),
    items,
    changed ? el('p', { class: 'hint', text: 'Not saved yet.' }) : null,
    broaden,
    errorLine('mandate'),
    actions,
    el('h4', { text: 'Templates' }),
    picker,
  );
}

async function saveMandate(agent: Data, rules: Data, confirmBroaden: Data, buttons: Data) {
  itemErrors.mandate = null;
  setBusy(buttons, true);
  state.pending += 1;
  try {
    await api('PUT', ctx.base + '/agents/' + encodeURIComponent(agent.id) + '/mandate', {
      rules: rules,
      confirmBroaden: confirmBroaden,
    });
    drafts.rules = null;
    drafts.broaden = null;
    say('Mandate saved: ' + agent.name);
  } catch (caught) {
    const err = failureOf(caught);
    if (sessionEnded(err)) return;
    if (err.type === 'confirm_broaden') drafts.broaden = err.message;
    else itemErrors.mandate = 'Save the mandate of “' + agent.name + '”: ' + err.message;
  } finally {
    state.pending -= 1;
    setBusy(buttons, false);
  }
  await load();
}

function keysPart(agent: Data, d: Data) {
  const keys = ((d.keys && d.keys.data) || []).filter(function (k: Data) {
    return !k.revokedAt;
  });
  const revokedCount = ((d.keys && d.keys.data) || []).length - keys.length;
  const list = keys.length
    ? el(
        'ul',
        { class: 'keys' },
        keys.map(function (k: Data) {
          const revoke = confirmButton('Revoke', 'Revoke key', function (buttons: Data) {
            void write(
              'key:' + k.id,
              'Revoke key ' + (k.name || k.id),
              buttons,
              'DELETE',
              '/agents/' + encodeURIComponent(agent.id) + '/keys/' + encodeURIComponent(k.id),
              undefined,
              function () {
                say('Key revoked: ' + (k.name || k.id));
              },
            );
          });
          return el(
            'li',
            { class: 'key', data: { key: k.id } },
            el(
              'div',
              {},
              el('strong', { text: k.name || 'Unnamed key' }),
              el('div', { class: 'muted mono', text: k.id }),
              el('div', { class: 'muted' }, 'Minted ', time(k.createdAt)),
            ),
            revoke,
            errorLine('key:' + k.id),
          );
        }),
      )
    : el('p', { class: 'empty', text: 'No live keys: the agent cannot call the gate.' });
  const name = el('input', {
    type: 'text',
    maxlength: '200',
    placeholder: 'Key name (optional)',
    'aria-label': 'Name of the new key',
    value: drafts.keyName,
    id: 'agent-key-name',
  });
  name.addEventListener('input', function () {
    drafts.keyName = name.value;
  });
  const mint = el('button', { type: 'submit', class: 'button button-primary', text: 'Mint key' });
  const form = el('form', { class: 'inline-form', novalidate: true, id: 'agent-key-form' }, name, mint);
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    const text = name.value.trim();
    void write(
      'mint',
      'Mint a key',
      [mint],
      'POST',
      '/agents/' + encodeURIComponent(agent.id) + '/keys',
      text ? { name: text } : {},
      function (answer: Data) {
        minted = { agentId: agent.id, id: answer.id, key: answer.key };
        drafts.keyName = '';
        say('Key minted: ' + (answer.name || answer.id));
      },
    );
  });
  const shown =
    minted && minted.agentId === agent.id
      ? secretOnce('New key ' + minted.id, minted.key, function () {
          minted = null;
        })
      : null;
  return el(
    'div',
    {
      class: 'detail-part',
      id: 'agent-keys',
      'data-permission': 'agents.manage',
      'data-acts-for': agent.actsFor || '',
    },
    el('h3', { text: 'Keys' }),
    shown,
    list,
    revokedCount ? el('p', { class: 'hint', text: revokedCount + ' revoked.' }) : null,
    errorLine('mint'),
    form,
  );
}

/**
 * The agents section (/console/agents) in the browser: the list (a table on a wide screen, one
 * block per agent on a phone), a new agent from a blueprint, and one agent's page (#agt_… in the
 * address): stop and restart with a reason, the mandate edited with the workspace's templates,
 * keys minted (the value shown once, with Copy) and revoked.
 */
export function section_agents() {
  root = $('#agents-section');
  canManage = root.dataset.canManage === 'true';
  canManageAll = root.dataset.canManageAll === 'true';

  // -- wiring --

  $('#agent-detail-close').addEventListener('click', function () {
    window.history.replaceState(null, '', window.location.pathname + window.location.search);
    minted = null;
    $('#agent-detail').hidden = true;
    state.detail = null;
    renderList();
  });
  window.addEventListener('hashchange', function () {
    drafts.rules = null;
    drafts.broaden = null;
    itemErrors.mandate = null;
    renderList();
    void loadDetail().then(function () {
      const card = $('#agent-detail');
      if (!card.hidden) card.scrollIntoView({ block: 'start' });
    });
  });
  wireCreate();
  keepFresh(load, function () {
    return state.pending > 0 || drafts.rules !== null || minted !== null;
  });
}
