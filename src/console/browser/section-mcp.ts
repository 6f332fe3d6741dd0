import { clock } from './text.js';
import { keepFresh } from './console-page.js';
import {
  body,
  failureOf,
  $,
  el,
  append,
  replace,
  api,
  showNotice,
  later,
  setBusy,
  time,
  type Data,
  type Control,
} from './helpers.js';
import { listAll } from './sections-shared.js';

const base = '/api/w/' + encodeURIComponent(body.dataset.workspace ?? '');
const state: { pending: number; agents: Data[] } = { pending: 0, agents: [] };

function textOf(s: Data) {
  if (!s) return [];
  const lines = ['description:'];
  String(s.description === null ? '(none)' : s.description)
    .split('\n')
    .forEach(function (l) {
      lines.push('  ' + l);
    });
  lines.push('inputSchema:');
  JSON.stringify(s.inputSchema, null, 2)
    .split('\n')
    .forEach(function (l) {
      lines.push('  ' + l);
    });
  // A state approved before the whole tool was pinned has neither field; null: the tool declares none.
  ['outputSchema', 'annotations'].forEach(function (field) {
    if (s[field] === undefined) return;
    lines.push(field + ':');
    (s[field] === null ? '(none)' : JSON.stringify(s[field], null, 2)).split('\n').forEach(function (l) {
      lines.push('  ' + l);
    });
  });
  return lines;
}

/** One state as a <pre> of text lines; lines absent from the other state are marked. */
function block(title: Data, lines: Data, other: Data, mark: Data, cls: Data) {
  const seen: Record<string, Data> = {};
  other.forEach(function (l: Data) {
    seen[l] = true;
  });
  return el(
    'div',
    { class: 'mcp-state' },
    el('h4', { text: title }),
    el(
      'pre',
      { class: 'mcp-text' },
      lines.length === 0
        ? el('span', { class: 'muted', text: '(never approved)' })
        : lines.map(function (l: Data) {
            const changed = !seen[l];
            return el(
              'span',
              { class: changed ? 'mcp-line ' + cls : 'mcp-line' },
              (changed ? mark : ' ') + ' ' + l + '\n',
            );
          }),
    ),
  );
}

function toolItem(server: Data, tool: Data) {
  const label = tool.status === 'approved' ? 'Approved' : tool.status === 'new' ? 'Never approved' : 'Changed upstream';
  const item = el(
    'li',
    { class: 'mcp-tool', data: { tool: tool.tool, status: tool.status } },
    el(
      'div',
      { class: 'mcp-tool-head' },
      el('span', { class: 'mcp-tool-name', text: tool.tool }),
      el('span', { class: 'mcp-badge mcp-' + tool.status, text: label }),
    ),
  );
  if (tool.status === 'approved') {
    append(
      item,
      el('p', {
        class: 'muted mcp-desc',
        text: tool.approved.description === null ? '(no description)' : tool.approved.description,
      }),
    );
    return item;
  }
  const before = textOf(tool.approved);
  const now = textOf(tool.changed);
  const error = el('p', { class: 'notice notice-error', role: 'alert', hidden: true });
  const button = el('button', { type: 'button', class: 'button button-primary', text: 'Approve ' + tool.tool });
  button.addEventListener(
    'click',
    later(async function () {
      setBusy([button], true);
      state.pending += 1;
      try {
        await api(
          'POST',
          base +
            '/mcp-servers/' +
            encodeURIComponent(server.name) +
            '/tools/' +
            encodeURIComponent(tool.tool) +
            '/approve',
          { hash: tool.changed.hash },
        );
        $('#status').textContent = 'Approved ' + tool.tool + ' on ' + server.name + '.';
        state.pending -= 1;
        await load();
      } catch (caught) {
        const err = failureOf(caught);
        state.pending -= 1;
        if (err.status === 401) {
          window.location.assign('/login');
          return;
        }
        showNotice(error, err.message);
        setBusy([button], false);
      }
    }),
  );
  append(item, [
    el(
      'p',
      { class: 'mcp-meta muted' },
      tool.approved ? ['Approved ', time(tool.approved.at), ' by ' + tool.approved.by + '. '] : [],
      'Seen ',
      time(tool.changed.seenAt),
      '. New hash ' + tool.changed.hash.slice(0, 12) + '…',
    ),
    el(
      'div',
      { class: 'mcp-diff' },
      block('Approved', before, now, '-', 'mcp-removed'),
      block('Upstream now', now, before, '+', 'mcp-added'),
    ),
    error,
    el('div', { class: 'mcp-approve' }, button),
  ]);
  return item;
}

// Why the upstream could not be used just now (its answer's problem: the cause, and the start of its body).
function unreachable(problem: Data) {
  const why = problem ? ': ' + problem.message + (problem.body ? ' (' + problem.body + ')' : '') : '';
  return 'The upstream could not be used just now' + why + '. Showing what was last seen.';
}

// Enables or disables a server (a disabled one is offered to no agent).
function toggleButton(server: Data) {
  const button = el('button', {
    type: 'button',
    class: 'button mcp-toggle',
    text: server.enabled ? 'Disable' : 'Enable',
  });
  button.addEventListener(
    'click',
    later(async function () {
      setBusy([button], true);
      state.pending += 1;
      try {
        await api('PATCH', base + '/mcp-servers/' + encodeURIComponent(server.name), { enabled: !server.enabled });
        $('#status').textContent = (server.enabled ? 'Disabled ' : 'Enabled ') + server.name + '.';
        state.pending -= 1;
        await load();
      } catch (caught) {
        const err = failureOf(caught);
        state.pending -= 1;
        if (err.status === 401) {
          window.location.assign('/login');
          return;
        }
        showNotice($('#error'), err.message);
        setBusy([button], false);
      }
    }),
  );
  return button;
}

/** One call that changes credentials, then the section again; the failure shown in 'error'. */
async function credentialCall(
  buttons: Control[],
  error: HTMLElement,
  method: string,
  path: string,
  payload?: unknown,
  done?: (answer: Data) => void,
) {
  setBusy(buttons, true);
  state.pending += 1;
  try {
    const answer = await api(method, path, payload);
    state.pending -= 1;
    if (done) done(answer);
    else await load();
  } catch (caught) {
    const err = failureOf(caught);
    state.pending -= 1;
    if (err.status === 401) {
      window.location.assign('/login');
      return;
    }
    showNotice(error, err.message);
    setBusy(buttons, false);
  }
}

function agentName(id: Data) {
  const found = state.agents.filter(function (a) {
    return a.id === id;
  })[0];
  return found ? found.name + ' (' + id + ')' : id;
}

/** The server's credentials, and the buttons that connect the workspace or an agent. */
function credentialsBlock(server: Data, creds: Data) {
  const path = base + '/mcp-servers/' + encodeURIComponent(server.name);
  const error = el('p', { class: 'notice notice-error', role: 'alert', hidden: true });
  const go = function (answer: Data) {
    window.location.assign(answer.authorizationUrl);
  };
  const items = (creds ? creds.data : []).map(function (c: Data) {
    const who = c.holder.workspace ? 'Workspace' : agentName(c.holder.agentId);
    const what = c.kind === 'oauth' ? 'connected' : 'own static secret';
    const remove = el('button', {
      type: 'button',
      class: 'button',
      text: c.kind === 'oauth' ? 'Disconnect' : 'Remove secret',
    });
    remove.addEventListener('click', function () {
      if (c.kind === 'oauth') void credentialCall([remove], error, 'POST', path + '/disconnect', { for: c.holder });
      else
        void credentialCall(
          [remove],
          error,
          'DELETE',
          path + '/credentials/agents/' + encodeURIComponent(c.holder.agentId),
        );
    });
    return el(
      'li',
      { class: 'mcp-credential', data: { kind: c.kind } },
      el('strong', { text: who }),
      ': ' + what + ' by ' + c.setBy + ', ',
      time(c.setAt),
      c.kind === 'oauth' && c.expiresAt ? ['; token expires ', time(c.expiresAt)] : [],
      '. ',
      remove,
    );
  });
  const forWorkspace = el('button', { type: 'button', class: 'button', text: 'Connect for the workspace' });
  const pick = el(
    'select',
    { 'aria-label': 'Agent to connect to ' + server.name },
    state.agents.map(function (a) {
      return el('option', { value: a.id, text: a.name });
    }),
  );
  const forAgent = el('button', { type: 'button', class: 'button', text: 'Connect an agent' });
  forWorkspace.addEventListener('click', function () {
    void credentialCall([forWorkspace, forAgent], error, 'POST', path + '/connect', { for: { workspace: true } }, go);
  });
  forAgent.addEventListener('click', function () {
    if (!pick.value) return;
    void credentialCall(
      [forWorkspace, forAgent],
      error,
      'POST',
      path + '/connect',
      { for: { agentId: pick.value } },
      go,
    );
  });
  return el(
    'div',
    { class: 'mcp-credentials' },
    el('h4', { text: 'Credentials' }),
    items.length === 0
      ? el('p', {
          class: 'muted',
          text: server.hasSecret ? 'The workspace secret only.' : 'None: the upstream is called without a credential.',
        })
      : el('ul', {}, items),
    error,
    el('div', { class: 'mcp-connect' }, forWorkspace, ' ', pick, ' ', forAgent),
  );
}

function serverCard(server: Data, answer: Data, failed: Data, creds: Data) {
  const tools = answer ? answer.data : [];
  const waiting = tools.filter(function (x: Data) {
    return x.status !== 'approved';
  }).length;
  // A local server (the config file's) has no address to show, and its command is never shown.
  const where = server.kind === 'local' ? 'Local server, from the configuration file' : server.url;
  const card = el(
    'section',
    { class: 'mcp-server', data: { server: server.name, kind: server.kind, enabled: String(server.enabled) } },
    el(
      'h3',
      {},
      el('span', { text: server.name }),
      ' ',
      waiting > 0 ? el('span', { class: 'mcp-badge mcp-changed', text: waiting + ' waiting' }) : null,
      server.enabled ? null : el('span', { class: 'mcp-badge', text: 'disabled' }),
    ),
    el('p', { class: 'muted mcp-url' }, where, ' ', toggleButton(server)),
  );
  if (failed) append(card, el('p', { class: 'notice notice-error', text: failed }));
  else if (answer && !answer.reachable)
    append(card, el('p', { class: 'notice mcp-problem', text: unreachable(answer.problem) }));
  if (tools.length === 0 && !failed) append(card, el('p', { class: 'muted', text: 'No tool pinned.' }));
  append(
    card,
    el(
      'ul',
      { class: 'mcp-tools' },
      tools
        .slice()
        .sort(function (a: Data, b: Data) {
          return Number(a.status === 'approved') - Number(b.status === 'approved') || (a.tool < b.tool ? -1 : 1);
        })
        .map(function (tool: Data) {
          return toolItem(server, tool);
        }),
    ),
  );
  append(card, credentialsBlock(server, creds));
  return card;
}

async function load() {
  state.pending += 1;
  try {
    const servers = (await api('GET', base + '/mcp-servers')).data;
    const answers = await Promise.allSettled(
      servers.map(function (s: Data) {
        return api('GET', base + '/mcp-servers/' + encodeURIComponent(s.name) + '/tools');
      }),
    );
    const creds = await Promise.allSettled(
      servers.map(function (s: Data) {
        return api('GET', base + '/mcp-servers/' + encodeURIComponent(s.name) + '/credentials');
      }),
    );
    state.agents =
      servers.length === 0
        ? []
        : await listAll(base + '/agents').catch(function () {
            return [];
          });
    $('#mcp-count').textContent = String(servers.length);
    replace(
      $('#mcp-body'),
      servers.length === 0
        ? el('p', { class: 'muted', text: 'No upstream MCP server in this workspace.' })
        : servers.map(function (s: Data, i: number) {
            const r = answers[i];
            const c = creds[i];
            return serverCard(
              s,
              r?.status === 'fulfilled' ? r.value : null,
              r?.status === 'rejected' ? r.reason.message : null,
              c?.status === 'fulfilled' ? c.value : null,
            );
          }),
    );
    showNotice($('#error'), '');
    $('#updated').textContent = 'Updated ' + clock(new Date());
  } catch (caught) {
    const err = failureOf(caught);
    if (err.status === 401) {
      window.location.assign('/login');
      return;
    }
    showNotice($('#error'), err.message);
  } finally {
    state.pending -= 1;
  }
}

// Back from an upstream's authorization server: say which connection was made.
const connected = new URLSearchParams(window.location.hash.slice(1)).get('connected');

/**
 * The MCP tools section (/console/mcp): the workspace's upstream MCP servers, each with its tools
 * (GET /mcp-servers/{name}/tools, which lists the upstream's tools again first). A changed or new
 * tool shows the approved and the current description, input schema, output schema and
 * annotations as text, line by line
 * (lines only in the approved state marked -, only in the current one +), and an Approve button
 * that approves exactly the state shown (its hash). A server is enabled or disabled there; a local
 * server (kind local, from the configuration file) shows no address.
 * Below, the server's credentials
 * (GET /mcp-servers/{name}/credentials): each agent's or the workspace's OAuth connection or static
 * secret, who set it, when it expires; a connection is started for the workspace or a chosen agent
 * (POST …/connect, then the browser goes to the authorization address) and removed (…/disconnect).
 */
export function section_mcp() {
  if (connected) $('#status').textContent = 'Connected ' + connected + '.';
  keepFresh(load, function () {
    return state.pending > 0;
  });
}
