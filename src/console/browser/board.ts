import { money, clock, ruleText } from './text.js';
import {
  failureOf,
  $,
  find,
  el,
  replace,
  api,
  showNotice,
  setBusy,
  time,
  type Data,
  type Child,
  type Control,
} from './helpers.js';
import { stackTable } from './sections-shared.js';
/**
 * The console's board: stop every agent, pending approvals (approve, deny, note) and agents (stop
 * with a reason, restart). Data is rendered with text nodes only; what a person typed survives a
 * reload; an error is shown beside the item it concerns, or named in the page's error line when
 * the item is gone after the reload.
 */
/** What the board is given: the workspace, the person, and what their role may do. */
export interface BoardContext {
  wid: string;
  me: string;
  canDecide: boolean;
  canStopAll: boolean;
  canReadMembers: boolean;
  /** Stops the agents that act for the person (every agent with canManageAll). */
  canManage: boolean;
  canManageAll: boolean;
}

/** The board's context and its workspace's API base, set by createBoard (a page has one board). */
let ctx: BoardContext;
let base: string;
const state: {
  agents: Data;
  approvals: Data;
  stopAll: Data;
  errors: Record<string, string | null>;
  pending: number;
} = { agents: null, approvals: null, stopAll: null, errors: {}, pending: 0 };
const drafts: { notes: Record<string, Data>; stops: Record<string, Data>; stopAll: string } = {
  notes: {},
  stops: {},
  stopAll: '',
};
const itemErrors: Record<string, Data> = {};
let shownErrors: Record<string, Data> = {};
const stopping: Record<string, Data> = {};
// Names of the workspace's people, for owners and admins (who may read the members list).
const people: Record<string, Data> = {};

/** The quiet line above the sections: what the last write did ('warn' when it did not go as asked). */
function status(message: string, kind?: 'warn') {
  const node = $('#status');
  node.textContent = message;
  node.className = 'status' + (kind === 'warn' ? ' status-warn' : '');
}

function sessionEnded(err: Data) {
  if (err && err.status === 401) {
    window.location.assign('/login');
    return true;
  }
  return false;
}

async function load() {
  state.pending += 1;
  const results = await Promise.allSettled([
    api('GET', base + '/stop-all'),
    find('#approvals') ? api('GET', base + '/approvals?status=pending') : Promise.resolve(null),
    api('GET', base + '/agents?limit=200'),
    // Names only make ids readable: without them the ids are shown, so a failure is not an error.
    ctx.canReadMembers
      ? api('GET', base + '/members?limit=200').catch(function () {
          return null;
        })
      : Promise.resolve(null),
  ]);
  const members = results.pop();
  if (members && members.status === 'fulfilled' && members.value && Array.isArray(members.value.data)) {
    members.value.data.forEach(function (m: Data) {
      people[m.id] = m.name || m.email;
    });
  }
  state.pending -= 1;
  if (
    results.some(function (r) {
      return r.status === 'rejected' && sessionEnded(r.reason);
    })
  )
    return;
  const keys = ['stopAll', 'approvals', 'agents'] as const;
  results.forEach(function (r, i) {
    const key = keys[i];
    if (!key) return;
    if (r.status === 'fulfilled') {
      state[key] = r.value;
      state.errors[key] = null;
    } else state.errors[key] = r.reason.message;
  });
  render();
  $('#updated').textContent = 'Updated ' + clock(new Date());
}

/**
 * Runs one write, then reloads. Its error is shown beside the item it concerns; when that item
 * is gone after the reload (decided or removed meanwhile), in the page's error line, named.
 */
async function write(
  key: string,
  label: string,
  buttons: Control[],
  method: string,
  path: string,
  payload: unknown,
  done?: (answer: Data) => void,
) {
  itemErrors[key] = null;
  showNotice($('#error'), '');
  setBusy(buttons, true);
  state.pending += 1;
  try {
    const answer = await api(method, base + path, payload);
    if (done) done(answer);
  } catch (caught) {
    const err = failureOf(caught);
    if (sessionEnded(err)) return;
    itemErrors[key] = err.message;
    status('');
  } finally {
    state.pending -= 1;
  }
  await load();
  if (itemErrors[key] && !shownErrors[key]) {
    showNotice($('#error'), label + ': ' + itemErrors[key]);
    delete itemErrors[key];
  }
}

function render() {
  shownErrors = {};
  renderStopAll();
  if (find('#approvals')) renderApprovals();
  renderAgents();
}

function errorLine(key: string) {
  if (itemErrors[key]) shownErrors[key] = true;
  return itemErrors[key]
    ? el('p', { class: 'notice notice-error item-error', role: 'alert', text: itemErrors[key] })
    : null;
}

function sectionError(key: string) {
  return el('p', { class: 'notice notice-error', role: 'alert', text: state.errors[key] });
}

function agentName(id: Data) {
  const list = (state.agents && state.agents.data) || [];
  for (let i = 0; i < list.length; i += 1) if (list[i].id === id) return list[i].name;
  return id;
}

/** A ledger actor (user:usr_…, token:name, a bare user id) as a person reads it. */
function who(by: Data) {
  if (!by) return 'someone';
  const text = String(by);
  const id = text.indexOf('user:') === 0 ? text.slice(5) : text;
  if (id === ctx.me) return 'you';
  if (people[id]) return people[id];
  if (text.indexOf('token:') === 0) return 'service token ' + text.slice(6);
  return text;
}

// -- stop every agent --

function renderStopAll() {
  const target = $('#stop-all-body');
  if (state.errors.stopAll && !state.stopAll) {
    replace(target, sectionError('stopAll'));
    return;
  }
  const s = state.stopAll;
  if (!s) return;
  let description;
  if (s.stopped) {
    description = el(
      'div',
      { class: 'switch-state' },
      el('strong', { text: 'Every agent is stopped.' }),
      el(
        'span',
        { class: 'muted' },
        s.reason ? 'Reason: ' + s.reason : null,
        s.reason ? ' · ' : null,
        'by ' + who(s.by),
        s.at ? ' · ' : null,
        s.at ? time(s.at) : null,
      ),
      el('span', {
        class: 'muted',
        text: 'No agent of this workspace can act until an owner or an admin lets them run again.',
      }),
    );
  } else {
    description = el(
      'div',
      { class: 'switch-state' },
      el('strong', {}, el('span', { class: 'badge badge-ok', text: 'Agents may run' })),
      el('span', {
        class: 'muted',
        text: 'Stops every agent of the workspace at once, on its very next request. Agents stopped one by one stay stopped.',
      }),
    );
  }
  let control: Data = null;
  if (ctx.canStopAll && s.stopped) {
    const resume = el('button', {
      type: 'button',
      class: 'button',
      id: 'stop-all-off',
      text: 'Let agents run again',
      'data-permission': 'workspace.stopAll',
    });
    resume.addEventListener('click', function () {
      void write('stopAll', 'Let agents run again', [resume], 'DELETE', '/stop-all', {}, function () {
        status('Agents may run again.');
      });
    });
    control = resume;
  } else if (ctx.canStopAll) {
    const reason = el('input', {
      id: 'stop-all-reason',
      type: 'text',
      maxlength: '500',
      placeholder: 'Reason (required)',
      'aria-label': 'Reason for stopping every agent',
      value: drafts.stopAll,
    });
    reason.addEventListener('input', function () {
      drafts.stopAll = reason.value;
    });
    const stop = el('button', {
      type: 'submit',
      class: 'button button-danger',
      id: 'stop-all-on',
      text: 'Stop every agent',
    });
    control = el(
      'form',
      { class: 'inline-form', novalidate: true, 'data-permission': 'workspace.stopAll' },
      reason,
      stop,
    );
    control.addEventListener('submit', function (event: Event) {
      event.preventDefault();
      const text = reason.value.trim();
      if (!text) {
        itemErrors.stopAll = 'Give a reason: it is recorded in the ledger with your name.';
        renderStopAll();
        $('#stop-all-reason').focus();
        return;
      }
      void write('stopAll', 'Stop every agent', [stop], 'POST', '/stop-all', { reason: text }, function () {
        drafts.stopAll = '';
        status('Every agent is stopped.');
      });
    });
  }
  // Who may not use the switch reads it only while every agent is stopped.
  if (!ctx.canStopAll) $('#stop-all').hidden = !s.stopped;
  replace(
    target,
    el('div', { class: 'switch' + (s.stopped ? ' stopped' : '') }, description, control),
    errorLine('stopAll'),
    state.errors.stopAll ? sectionError('stopAll') : null,
  );
}

// -- approvals --

/**
 * One list of the board (approvals, agents: #{key}-body, #{key}-count): its count, its items
 * (content(list)) or the line that says there are none, and its error when its last load failed.
 */
function renderList(key: 'approvals' | 'agents', emptyText: string, content: (list: Data[]) => Child) {
  const target = $('#' + key + '-body');
  const count = $('#' + key + '-count');
  if (state.errors[key] && !state[key]) {
    count.textContent = '';
    replace(target, sectionError(key));
    return;
  }
  const list = (state[key] && state[key].data) || [];
  count.textContent = list.length ? String(list.length) : '';
  const error = state.errors[key] ? sectionError(key) : null;
  if (!list.length) {
    replace(target, el('p', { class: 'empty', text: emptyText }), error);
    return;
  }
  replace(target, content(list), error);
}

function renderApprovals() {
  renderList('approvals', 'Nothing is waiting for a decision.', function (list: Data) {
    return el('ul', { class: 'items' }, list.map(approvalItem));
  });
}

function approvalItem(a: Data) {
  const action = a.action || {};
  const amount = money(action.payment);
  const merchant = action.payment && action.payment.merchant;
  const required = a.requiredApprovals || 1;
  const given = (a.approvals || []).length;
  const details = el(
    'div',
    { class: 'item-main' },
    el('div', { class: 'item-title', text: action.summary || 'Action ' + a.actionId }),
    amount
      ? el(
          'div',
          { class: 'item-amount' },
          amount,
          merchant ? el('span', { class: 'muted', text: ' to ' + merchant }) : null,
        )
      : null,
    el(
      'div',
      { class: 'item-meta' },
      el('span', {}, 'Agent ', el('strong', { text: agentName(a.agentId) })),
      action.type ? el('span', { text: 'Type ' + action.type }) : null,
      el('span', {}, 'Asked ', time(a.createdAt)),
      a.expiresAt ? el('span', {}, 'Expires ', time(a.expiresAt)) : null,
      required > 1 ? el('span', { class: 'badge badge-warn', text: given + ' of ' + required + ' approvals' }) : null,
      a.approvers && a.approvers.length ? el('span', { text: 'Named approvers only' }) : null,
    ),
    // Why a person is asked: the rule (as the mandate holds it now) and the gate's reason.
    a.rule || action.reason
      ? el(
          'div',
          { class: 'why' },
          a.rule
            ? el(
                'div',
                { class: 'why-line approval-rule' },
                el('span', { class: 'why-label', text: 'Rule' }),
                el('span', { text: ruleText(a.rule) }),
              )
            : null,
          action.reason
            ? el(
                'div',
                { class: 'why-line approval-reason' },
                el('span', { class: 'why-label', text: 'Reason' }),
                el('span', { text: action.reason }),
              )
            : null,
        )
      : null,
    (a.approvals || []).length
      ? el(
          'ul',
          { class: 'item-history' },
          a.approvals.map(function (x: Data) {
            return el(
              'li',
              {},
              'Approved by ' + who(x.by) + ' ',
              x.at ? time(x.at) : null,
              x.note ? ': “' + x.note + '”' : null,
            );
          }),
        )
      : null,
    errorLine(a.id),
  );
  if (!ctx.canDecide) return el('li', { class: 'item', data: { approval: a.id } }, details);
  const note = el('input', {
    type: 'text',
    maxlength: '1000',
    placeholder: 'Note (optional)',
    'aria-label': 'Note for this decision',
    value: drafts.notes[a.id] || '',
  });
  note.addEventListener('input', function () {
    drafts.notes[a.id] = note.value;
  });
  const approve = el('button', { type: 'button', class: 'button button-approve', text: 'Approve' });
  const deny = el('button', { type: 'button', class: 'button button-outline-danger', text: 'Deny' });
  function decide(verb: string, _button: HTMLButtonElement) {
    const text = note.value.trim();
    const label = action.summary || a.actionId;
    void write(
      a.id,
      (verb === 'approve' ? 'Approve “' : 'Deny “') + label + '”',
      [approve, deny],
      'POST',
      '/approvals/' + encodeURIComponent(a.id) + '/' + verb,
      text ? { note: text } : {},
      function (answer: Data) {
        delete drafts.notes[a.id];
        if (answer && answer.status === 'pending') status('Your approval is recorded; it needs another person.');
        else if (verb === 'approve' && answer && answer.status !== 'approved')
          status('Not allowed after all: ' + label + (answer.reason ? ' (' + answer.reason + ')' : ''), 'warn');
        else status((verb === 'approve' ? 'Approved: ' : 'Denied: ') + label);
      },
    );
  }
  approve.addEventListener('click', function () {
    decide('approve', approve);
  });
  deny.addEventListener('click', function () {
    decide('deny', deny);
  });
  return el(
    'li',
    { class: 'item', data: { approval: a.id } },
    details,
    el(
      'div',
      { class: 'item-decide', 'data-permission': 'approvals.decide' },
      note,
      el('div', { class: 'buttons' }, deny, approve),
    ),
  );
}

// -- agents --

function renderAgents() {
  renderList('agents', 'No agents yet.', function (list: Data) {
    return [
      stackTable(['Agent', 'Standing', 'Holds', null], list.map(agentRow)),
      state.agents.next ? el('p', { class: 'hint', text: 'Showing the first ' + list.length + ' agents.' }) : null,
    ];
  });
}

function agentRow(agent: Data) {
  // The gate's standing: the agent's own holds, else "stop every agent" (hold workspace).
  const everyAgent = state.stopAll && state.stopAll.stopped;
  const stopped = agent.status === 'stopped' || Boolean(everyAgent);
  const holds = (agent.holds || []).slice();
  if (everyAgent && !holds.length)
    holds.push({ hold: 'workspace', reason: state.stopAll.reason, by: state.stopAll.by, at: state.stopAll.at });
  const name = el(
    'td',
    { 'data-label': 'Agent' },
    el('div', { class: 'agent-name', text: agent.name }),
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
    agent.actsFor && agent.actsFor === ctx.me ? el('div', { class: 'hint', text: 'Acts for you' }) : null,
  );
  const standing = el(
    'td',
    { 'data-label': 'Standing' },
    el('span', { class: 'badge ' + (stopped ? 'badge-danger' : 'badge-ok'), text: stopped ? 'Stopped' : 'Running' }),
  );
  const holdList = holds.length
    ? el(
        'ul',
        { class: 'holds' },
        holds.map(function (h: Data) {
          return el(
            'li',
            {},
            el('strong', { text: h.hold }),
            h.reason ? ' · ' + h.reason : null,
            ' · by ' + who(h.by) + ' ',
            h.at ? time(h.at) : null,
          );
        }),
      )
    : el('span', { class: 'muted', text: '—' });
  const actions = el(
    'td',
    { class: 'actions', 'data-label': 'Actions' },
    agentActions(agent, agent.holds || []),
    errorLine(agent.id),
  );
  return el(
    'tr',
    { data: { agent: agent.id } },
    name,
    standing,
    el('td', { 'data-label': 'Holds' }, holdList),
    actions,
  );
}

/**
 * Stop with a reason (who may manage the agent: the person it acts for, an owner or an admin)
 * and restart (the person it acts for, an owner or an admin), each offered only to them.
 */
function agentActions(agent: Data, holds: Data) {
  const held = holds.some(function (h: Data) {
    return h.hold === 'owner';
  });
  const own = agent.actsFor === ctx.me;
  const mayStop = ctx.canManage && (ctx.canManageAll || own);
  const mayRestart = ctx.canManageAll || own;
  const acts = { 'data-acts-for': agent.actsFor || '' };
  if (stopping[agent.id] && mayStop) {
    const reason = el('input', {
      type: 'text',
      maxlength: '500',
      placeholder: 'Reason (required)',
      'aria-label': 'Reason for stopping ' + agent.name,
      value: drafts.stops[agent.id] || '',
    });
    reason.addEventListener('input', function () {
      drafts.stops[agent.id] = reason.value;
    });
    const confirm = el('button', { type: 'submit', class: 'button button-danger', text: 'Stop agent' });
    const cancel = el('button', { type: 'button', class: 'button button-quiet', text: 'Cancel' });
    cancel.addEventListener('click', function () {
      delete stopping[agent.id];
      delete itemErrors[agent.id];
      renderAgents();
    });
    const form = el(
      'form',
      { class: 'inline-form', novalidate: true, 'data-permission': 'agents.manage', ...acts },
      reason,
      cancel,
      confirm,
    );
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      const text = reason.value.trim();
      if (!text) {
        itemErrors[agent.id] = 'Give a reason: it is recorded in the ledger with your name.';
        renderAgents();
        return;
      }
      void write(
        agent.id,
        'Stop “' + agent.name + '”',
        [confirm, cancel],
        'POST',
        '/agents/' + encodeURIComponent(agent.id) + '/stop',
        { reason: text },
        function () {
          delete stopping[agent.id];
          delete drafts.stops[agent.id];
          status('Stopped: ' + agent.name);
        },
      );
    });
    window.setTimeout(function () {
      if (document.activeElement === document.body) reason.focus();
    }, 0);
    return form;
  }
  const buttons: Data[] = [];
  if (mayStop && !held) {
    const stop = el('button', {
      type: 'button',
      class: 'button button-outline-danger',
      text: 'Stop…',
      'data-permission': 'agents.manage',
      ...acts,
    });
    stop.addEventListener('click', function () {
      stopping[agent.id] = true;
      renderAgents();
    });
    buttons.push(stop);
  }
  if (mayRestart && agent.status === 'stopped') {
    const restart = el('button', {
      type: 'button',
      class: 'button',
      text: 'Restart',
      'data-permission': 'workspace.read',
      ...acts,
    });
    restart.addEventListener('click', function () {
      void write(
        agent.id,
        'Restart “' + agent.name + '”',
        [restart],
        'POST',
        '/agents/' + encodeURIComponent(agent.id) + '/restart',
        {},
        function () {
          status('Restarted: ' + agent.name);
        },
      );
    });
    buttons.push(restart);
  }
  return el('div', { class: 'inline-form' }, buttons);
}

export function createBoard(context: BoardContext): { load: () => Promise<void>; busy: () => boolean } {
  ctx = context;
  base = '/api/w/' + encodeURIComponent(ctx.wid);

  return {
    load: load,
    busy: function () {
      return state.pending > 0;
    },
  };
}
