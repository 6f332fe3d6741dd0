import { keepFresh } from './console-page.js';
import { failureOf, $, el, replace, showNotice, later, time, type Data } from './helpers.js';
import {
  workspaceContext,
  say,
  sessionEnded,
  listAll,
  itemWriter,
  submitForm,
  stackTable,
  updated,
  confirmButton,
} from './sections-shared.js';

const ctx = workspaceContext();
let root: HTMLElement;
let isOwner: boolean;
let canUnlock: boolean;
const ROLES = ['owner', 'admin', 'member', 'analyst', 'auditor'];
const state: { members: Data; error: Data; pending: number } = { members: null, error: null, pending: 0 };
const itemErrors: Record<string, Data> = {};
const roleDrafts: Record<string, Data> = {};

async function load() {
  state.pending += 1;
  try {
    state.members = await listAll(ctx.base + '/members');
    state.error = null;
  } catch (caught) {
    const err = failureOf(caught);
    if (sessionEnded(err)) return;
    state.error = err.message;
  } finally {
    state.pending -= 1;
  }
  render();
  updated();
}

const write = itemWriter({ base: ctx.base, state: state, itemErrors: itemErrors, load: load });

function render() {
  const target = $('#members-body');
  const errorNotice = state.error ? el('p', { class: 'notice notice-error', role: 'alert', text: state.error }) : null;
  if (!state.members) {
    replace(target, errorNotice);
    return;
  }
  $('#members-count').textContent = String(state.members.length);
  replace(target, stackTable(['Person', 'Role', 'Two-factor', 'Added', null], state.members.map(row)), errorNotice);
}

function row(m: Data) {
  const self = m.id === ctx.me;
  // Only an owner changes or removes an owner's membership (the API refuses admins).
  const mayChange = isOwner || m.role !== 'owner';
  const label = m.name || m.email;
  const person = el(
    'td',
    { 'data-label': 'Person' },
    el('div', { class: 'agent-name' }, label, self ? el('span', { class: 'muted', text: ' (you)' }) : null),
    el('div', { class: 'muted', text: m.email }),
    m.lockedUntil
      ? el(
          'div',
          { class: 'locked' },
          el('span', { class: 'badge badge-danger', text: 'Locked out' }),
          ' until ',
          el('time', {
            datetime: m.lockedUntil,
            title: m.lockedUntil,
            text: new Date(m.lockedUntil).toLocaleString(),
          }),
        )
      : null,
  );
  let role;
  if (mayChange) {
    const select = el(
      'select',
      { 'aria-label': 'Role of ' + label },
      ROLES.filter(function (r) {
        return isOwner || r !== 'owner';
      }).map(function (r) {
        return el('option', { value: r, text: r });
      }),
    );
    select.value = roleDrafts[m.id] || m.role;
    const save = el('button', {
      type: 'button',
      class: 'button',
      text: 'Change role',
      hidden: select.value === m.role,
    });
    select.addEventListener('change', function () {
      roleDrafts[m.id] = select.value;
      save.hidden = select.value === m.role;
    });
    save.addEventListener('click', function () {
      const to = select.value;
      void write(
        m.id,
        'Change the role of ' + label,
        [save, select],
        'PATCH',
        '/members/' + encodeURIComponent(m.id),
        { role: to },
        function () {
          delete roleDrafts[m.id];
          say(label + ' is now ' + to + '.');
        },
      );
    });
    role = el('td', { 'data-label': 'Role' }, el('div', { class: 'inline-form' }, select, save));
  } else {
    role = el('td', { 'data-label': 'Role' }, el('span', { class: 'badge badge-neutral', text: m.role }));
  }
  const twoFactor = el(
    'td',
    { 'data-label': 'Two-factor' },
    el('span', { class: 'badge ' + (m.twoFactor ? 'badge-ok' : 'badge-warn'), text: m.twoFactor ? 'On' : 'Off' }),
  );
  const actions: Data[] = [];
  if (m.lockedUntil && canUnlock && !self) {
    const lift = el('button', {
      type: 'button',
      class: 'button',
      text: 'Lift lockout',
      'data-permission': 'members.unlock',
    });
    lift.addEventListener('click', function () {
      void write(
        m.id,
        'Lift the lockout of ' + label,
        [lift],
        'DELETE',
        '/members/' + encodeURIComponent(m.id) + '/lockout',
        undefined,
        function () {
          say('Lockout lifted: ' + label);
        },
      );
    });
    actions.push(lift);
  }
  if (mayChange) {
    actions.push(
      confirmButton(
        self ? 'Leave' : 'Remove',
        self ? 'Leave the workspace' : 'Remove ' + label,
        function (buttons: Data) {
          void write(
            m.id,
            'Remove ' + label,
            buttons,
            'DELETE',
            '/members/' + encodeURIComponent(m.id),
            undefined,
            function () {
              if (self) {
                window.location.assign('/console');
                return;
              }
              say('Removed: ' + label + '. Their sessions ended.');
            },
          );
        },
      ),
    );
  }
  return el(
    'tr',
    { data: { member: m.id } },
    person,
    role,
    twoFactor,
    el('td', { 'data-label': 'Added' }, time(m.addedAt)),
    el(
      'td',
      { class: 'actions', 'data-label': 'Actions' },
      el('div', { class: 'inline-form' }, actions),
      itemErrors[m.id]
        ? el('p', { class: 'notice notice-error item-error', role: 'alert', text: itemErrors[m.id] })
        : null,
    ),
  );
}

/**
 * The members section (/console/members) in the browser: people with role, two-factor and any
 * lockout; change a role, remove a person (asked twice), lift a lockout (owners, never their
 * own); add a person. Actions the caller's role cannot take are not offered: admins get none on
 * an owner's row, and cannot make owners.
 */
export function section_members() {
  root = $('#members-section');
  isOwner = root.dataset.isOwner === 'true';
  canUnlock = root.dataset.canUnlock === 'true';

  $('#member-new-form').addEventListener(
    'submit',
    later(async function (event) {
      event.preventDefault();
      const error = $('#member-new-error');
      const email = $<HTMLInputElement>('#member-new-email').value.trim();
      const name = $<HTMLInputElement>('#member-new-name').value.trim();
      const password = $<HTMLInputElement>('#member-new-password').value;
      if (!email || !name) {
        showNotice(error, "Give the person's email and name.");
        return;
      }
      const payload: Record<string, unknown> = {
        email: email,
        name: name,
        role: $<HTMLInputElement>('#member-new-role').value,
      };
      if (password) payload.password = password;
      await submitForm(
        state,
        error,
        [$<HTMLButtonElement>('#member-new-submit')],
        'POST',
        ctx.base + '/members',
        payload,
        function (added: Data) {
          ['#member-new-email', '#member-new-name', '#member-new-password'].forEach(function (s) {
            $<HTMLInputElement>(s).value = '';
          });
          say('Added: ' + (added.name || added.email) + ' as ' + added.role + '.');
        },
        load,
      );
    }),
  );

  keepFresh(load, function () {
    return state.pending > 0 || Object.keys(roleDrafts).length > 0;
  });
}
