import { money, ruleText, actorName } from './text.js';
import { keepFresh } from './console-page.js';
import { failureOf, $, el, replace, api, showNotice, setBusy, time, type Data } from './helpers.js';
import { workspaceContext, say, sessionEnded, listAll, updated } from './sections-shared.js';

const ctx = workspaceContext();
let root: HTMLElement;
let canDecide: boolean;
let canReadMembers: boolean;
const state: {
  approvals: Data;
  agents: Record<string, Data>;
  people: Record<string, Data>;
  error: Data;
  pending: number;
} = { approvals: null, agents: {}, people: {}, error: null, pending: 0 };
const notes: Record<string, Data> = {};
const itemErrors: Record<string, Data> = {};

async function load() {
  state.pending += 1;
  try {
    const results = await Promise.allSettled([
      listAll(ctx.base + '/approvals?status=pending'),
      // Names only make ids readable: without them the ids are shown.
      listAll(ctx.base + '/agents').catch(function () {
        return [];
      }),
      canReadMembers
        ? listAll(ctx.base + '/members').catch(function () {
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
    if (results[0].status === 'fulfilled') {
      state.approvals = results[0].value;
      state.error = null;
    } else state.error = results[0].reason.message;
    (results[1]?.status === 'fulfilled' ? results[1].value : []).forEach(function (a: Data) {
      state.agents[a.id] = a.name;
    });
    (results[2]?.status === 'fulfilled' ? results[2].value : []).forEach(function (m: Data) {
      state.people[m.id] = m.name || m.email;
    });
    render();
    updated();
  } finally {
    state.pending -= 1;
  }
}

function render() {
  const target = $('#approvals-body');
  const count = $('#approvals-count');
  const errorNotice = state.error ? el('p', { class: 'notice notice-error', role: 'alert', text: state.error }) : null;
  if (!state.approvals) {
    count.textContent = '';
    replace(target, errorNotice);
    return;
  }
  const list = state.approvals;
  count.textContent = list.length ? String(list.length) : '';
  const gone = Object.keys(itemErrors).filter(function (id) {
    return !list.some(function (a: Data) {
      return a.id === id;
    });
  });
  gone.forEach(function (id) {
    showNotice($('#error'), itemErrors[id]);
    delete itemErrors[id];
  });
  if (!list.length) {
    replace(target, el('p', { class: 'empty', text: 'Nothing is waiting for a decision.' }), errorNotice);
    return;
  }
  replace(target, el('ol', { class: 'items approvals-list' }, list.map(item)), errorNotice);
}

function waited(iso: Data) {
  const ms = Date.now() - Date.parse(iso);
  if (!(ms > 0)) return 'just now';
  const minutes = Math.floor(ms / 60000);
  if (minutes < 1) return 'less than a minute';
  if (minutes < 60) return minutes + (minutes === 1 ? ' minute' : ' minutes');
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return hours + (hours === 1 ? ' hour' : ' hours');
  return Math.floor(hours / 24) + ' days';
}

function title(a: Data) {
  if (a.freeze) return 'Freeze ' + a.freeze.agentIds.length + ' agents' + (a.freeze.all ? ' (every agent)' : '');
  return a.action && a.action.summary ? a.action.summary : 'Action ' + a.actionId;
}

function item(a: Data, index: Data) {
  const action = a.action || {};
  const amount = money(action.payment);
  const merchant = action.payment && action.payment.merchant;
  const required = a.requiredApprovals || 1;
  const given = (a.approvals || []).length;
  const why: Data[] = [];
  if (a.freeze) {
    why.push(
      el(
        'div',
        { class: 'why-line' },
        el('span', { class: 'why-label', text: 'Reason' }),
        el('span', { text: a.freeze.reason }),
      ),
    );
    why.push(
      el(
        'div',
        { class: 'why-line' },
        el('span', { class: 'why-label', text: 'Asked by' }),
        el('span', { text: actorName(a.freeze.requestedBy, ctx.me, state.people) }),
      ),
    );
  } else {
    why.push(
      el(
        'div',
        { class: 'why-line approval-rule' },
        el('span', { class: 'why-label', text: 'Rule' }),
        a.rule
          ? el('span', { text: ruleText(a.rule) })
          : el('span', {
              class: 'muted',
              text: action.ruleId ? 'rule ' + action.ruleId + ' (changed since)' : 'no rule recorded',
            }),
        a.rule ? el('span', { class: 'muted mono rule-id', text: a.rule.id }) : null,
      ),
    );
    if (action.reason)
      why.push(
        el(
          'div',
          { class: 'why-line approval-reason' },
          el('span', { class: 'why-label', text: 'Reason' }),
          el('span', { text: action.reason }),
        ),
      );
  }
  const details = el(
    'div',
    { class: 'item-main' },
    el(
      'div',
      { class: 'item-title' },
      el('span', { class: 'item-rank', text: String(index + 1) + '.' }),
      ' ',
      title(a),
    ),
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
      a.agentId ? el('span', {}, 'Agent ', el('strong', { text: state.agents[a.agentId] || a.agentId })) : null,
      action.type ? el('span', { text: 'Type ' + action.type }) : null,
      el('span', { class: 'waited' }, 'Waiting ' + waited(a.createdAt) + ' · asked ', time(a.createdAt)),
      a.expiresAt ? el('span', {}, 'Expires ', time(a.expiresAt)) : null,
      required > 1 ? el('span', { class: 'badge badge-warn', text: given + ' of ' + required + ' approvals' }) : null,
      a.approvers && a.approvers.length
        ? el('span', {
            text:
              'Named approvers: ' +
              a.approvers
                .map(function (id: Data) {
                  return actorName(id, ctx.me, state.people);
                })
                .join(', '),
          })
        : null,
      a.separationOfDuties ? el('span', { text: 'Not the person it acts for' }) : null,
    ),
    el('div', { class: 'why' }, why),
    given
      ? el(
          'ul',
          { class: 'item-history' },
          a.approvals.map(function (x: Data) {
            return el(
              'li',
              {},
              'Approved by ' + actorName(x.by, ctx.me, state.people) + ' ',
              x.at ? time(x.at) : null,
              x.note ? ': “' + x.note + '”' : null,
            );
          }),
        )
      : null,
    itemErrors[a.id]
      ? el('p', { class: 'notice notice-error item-error', role: 'alert', text: itemErrors[a.id] })
      : null,
  );
  if (!canDecide) return el('li', { class: 'item', data: { approval: a.id } }, details);
  const note = el('input', {
    type: 'text',
    maxlength: '1000',
    placeholder: 'Note (optional)',
    'aria-label': 'Note for this decision',
    value: notes[a.id] || '',
  });
  note.addEventListener('input', function () {
    notes[a.id] = note.value;
  });
  const approve = el('button', { type: 'button', class: 'button button-approve', text: 'Approve' });
  const deny = el('button', { type: 'button', class: 'button button-outline-danger', text: 'Deny' });
  async function decide(verb: Data) {
    const text = note.value.trim();
    const label = title(a);
    delete itemErrors[a.id];
    showNotice($('#error'), '');
    setBusy([approve, deny], true);
    state.pending += 1;
    try {
      const answer = await api(
        'POST',
        ctx.base + '/approvals/' + encodeURIComponent(a.id) + '/' + verb,
        text ? { note: text } : {},
      );
      delete notes[a.id];
      if (verb === 'approve' && answer && answer.status !== 'approved')
        say('Not allowed after all: ' + label + (answer.reason ? ' (' + answer.reason + ')' : ''), 'warn');
      else say((verb === 'approve' ? 'Approved: ' : 'Denied: ') + label);
    } catch (caught) {
      const err = failureOf(caught);
      if (sessionEnded(err)) return;
      if (err.type === 'second_person_required' && verb === 'approve') {
        delete notes[a.id];
        say('Your approval is recorded; it needs another person.');
      } else {
        itemErrors[a.id] = (verb === 'approve' ? 'Approve “' : 'Deny “') + label + '”: ' + err.message;
        say('');
      }
    } finally {
      state.pending -= 1;
    }
    await load();
  }
  approve.addEventListener('click', function () {
    void decide('approve');
  });
  deny.addEventListener('click', function () {
    void decide('deny');
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

/**
 * The approvals section (/console/approvals) in the browser: what waits for a person, oldest
 * first (as the API answers), each with what the agent asked, the rule that asked for a person and
 * the gate's reason, how long it has waited; approve or deny with a note.
 */
export function section_approvals() {
  root = $('#approvals-section');
  canDecide = root.dataset.canDecide === 'true';
  canReadMembers = root.dataset.canReadMembers === 'true';

  keepFresh(load, function () {
    return state.pending > 0;
  });
}
