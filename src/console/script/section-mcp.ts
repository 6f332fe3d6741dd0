/**
 * The MCP tools section (/console/mcp): the workspace's upstream MCP servers, each with its tools
 * (GET /mcp-servers/{name}/tools, which lists the upstream's tools again first). A changed or new
 * tool shows the approved and the current description, input schema, output schema and
 * annotations as text, line by line
 * (lines only in the approved state marked -, only in the current one +), and an Approve button
 * that approves exactly the state shown (its hash). A server is enabled or disabled there; a local
 * server (kind local, from the configuration file) shows no address.
 * Browser JavaScript kept as text (String.raw: no backtick and no dollar-brace inside); it runs
 * inside the one function of script/index.ts, beside the other parts.
 */
export const SECTION_MCP = String.raw`
  function section_mcp() {
    var base = '/api/w/' + encodeURIComponent(body.dataset.workspace);
    var state = { pending: 0 };

    function textOf(s) {
      if (!s) return [];
      var lines = ['description:'];
      String(s.description === null ? '(none)' : s.description).split('\n').forEach(function (l) { lines.push('  ' + l); });
      lines.push('inputSchema:');
      JSON.stringify(s.inputSchema, null, 2).split('\n').forEach(function (l) { lines.push('  ' + l); });
      // A state approved before the whole tool was pinned has neither field; null: the tool declares none.
      ['outputSchema', 'annotations'].forEach(function (field) {
        if (s[field] === undefined) return;
        lines.push(field + ':');
        (s[field] === null ? '(none)' : JSON.stringify(s[field], null, 2)).split('\n').forEach(function (l) { lines.push('  ' + l); });
      });
      return lines;
    }

    /** One state as a <pre> of text lines; lines absent from the other state are marked. */
    function block(title, lines, other, mark, cls) {
      var seen = {};
      other.forEach(function (l) { seen[l] = true; });
      return el('div', { class: 'mcp-state' },
        el('h4', { text: title }),
        el('pre', { class: 'mcp-text' }, lines.length === 0
          ? el('span', { class: 'muted', text: '(never approved)' })
          : lines.map(function (l) {
            var changed = !seen[l];
            return el('span', { class: changed ? 'mcp-line ' + cls : 'mcp-line' }, (changed ? mark : ' ') + ' ' + l + '\n');
          })));
    }

    function toolItem(server, tool) {
      var label = tool.status === 'approved' ? 'Approved' : tool.status === 'new' ? 'Never approved' : 'Changed upstream';
      var item = el('li', { class: 'mcp-tool', data: { tool: tool.tool, status: tool.status } },
        el('div', { class: 'mcp-tool-head' },
          el('span', { class: 'mcp-tool-name', text: tool.tool }),
          el('span', { class: 'mcp-badge mcp-' + tool.status, text: label })));
      if (tool.status === 'approved') {
        append(item, el('p', { class: 'muted mcp-desc', text: tool.approved.description === null ? '(no description)' : tool.approved.description }));
        return item;
      }
      var before = textOf(tool.approved);
      var now = textOf(tool.changed);
      var error = el('p', { class: 'notice notice-error', role: 'alert', hidden: true });
      var button = el('button', { type: 'button', class: 'button button-primary', text: 'Approve ' + tool.tool });
      button.addEventListener('click', async function () {
        setBusy([button], true);
        state.pending += 1;
        try {
          await api('POST', base + '/mcp-servers/' + encodeURIComponent(server.name) + '/tools/' + encodeURIComponent(tool.tool) + '/approve', { hash: tool.changed.hash });
          $('#status').textContent = 'Approved ' + tool.tool + ' on ' + server.name + '.';
          state.pending -= 1;
          await load();
        } catch (err) {
          state.pending -= 1;
          if (err.status === 401) { window.location.assign('/login'); return; }
          showNotice(error, err.message);
          setBusy([button], false);
        }
      });
      append(item, [
        el('p', { class: 'mcp-meta muted' },
          tool.approved ? ['Approved ', time(tool.approved.at), ' by ' + tool.approved.by + '. '] : [],
          'Seen ', time(tool.changed.seenAt), '. New hash ' + tool.changed.hash.slice(0, 12) + '…'),
        el('div', { class: 'mcp-diff' },
          block('Approved', before, now, '-', 'mcp-removed'),
          block('Upstream now', now, before, '+', 'mcp-added')),
        error,
        el('div', { class: 'mcp-approve' }, button)]);
      return item;
    }

    // Why the upstream could not be used just now (its answer's problem: the cause, and the start of its body).
    function unreachable(problem) {
      var why = problem ? ': ' + problem.message + (problem.body ? ' (' + problem.body + ')' : '') : '';
      return 'The upstream could not be used just now' + why + '. Showing what was last seen.';
    }

    // Enables or disables a server (a disabled one is offered to no agent).
    function toggleButton(server) {
      var button = el('button', { type: 'button', class: 'button mcp-toggle', text: server.enabled ? 'Disable' : 'Enable' });
      button.addEventListener('click', async function () {
        setBusy([button], true);
        state.pending += 1;
        try {
          await api('PATCH', base + '/mcp-servers/' + encodeURIComponent(server.name), { enabled: !server.enabled });
          $('#status').textContent = (server.enabled ? 'Disabled ' : 'Enabled ') + server.name + '.';
          state.pending -= 1;
          await load();
        } catch (err) {
          state.pending -= 1;
          if (err.status === 401) { window.location.assign('/login'); return; }
          showNotice($('#error'), err.message);
          setBusy([button], false);
        }
      });
      return button;
    }

    function serverCard(server, answer, failed) {
      var tools = answer ? answer.data : [];
      var waiting = tools.filter(function (x) { return x.status !== 'approved'; }).length;
      // A local server (the config file's) has no address to show, and its command is never shown.
      var where = server.kind === 'local' ? 'Local server, from the configuration file' : server.url;
      var card = el('section', { class: 'mcp-server', data: { server: server.name, kind: server.kind, enabled: String(server.enabled) } },
        el('h3', {}, el('span', { text: server.name }), ' ',
          waiting > 0 ? el('span', { class: 'mcp-badge mcp-changed', text: waiting + ' waiting' }) : null,
          server.enabled ? null : el('span', { class: 'mcp-badge', text: 'disabled' })),
        el('p', { class: 'muted mcp-url' }, where, ' ', toggleButton(server)));
      if (failed) append(card, el('p', { class: 'notice notice-error', text: failed }));
      else if (answer && !answer.reachable) append(card, el('p', { class: 'notice mcp-problem', text: unreachable(answer.problem) }));
      if (tools.length === 0 && !failed) append(card, el('p', { class: 'muted', text: 'No tool pinned.' }));
      append(card, el('ul', { class: 'mcp-tools' }, tools
        .slice()
        .sort(function (a, b) { return (a.status === 'approved') - (b.status === 'approved') || (a.tool < b.tool ? -1 : 1); })
        .map(function (tool) { return toolItem(server, tool); })));
      return card;
    }

    async function load() {
      state.pending += 1;
      try {
        var servers = (await api('GET', base + '/mcp-servers')).data;
        var answers = await Promise.allSettled(servers.map(function (s) {
          return api('GET', base + '/mcp-servers/' + encodeURIComponent(s.name) + '/tools');
        }));
        $('#mcp-count').textContent = String(servers.length);
        replace($('#mcp-body'), servers.length === 0
          ? el('p', { class: 'muted', text: 'No upstream MCP server in this workspace.' })
          : servers.map(function (s, i) {
            var r = answers[i];
            return serverCard(s, r.status === 'fulfilled' ? r.value : null, r.status === 'rejected' ? r.reason.message : null);
          }));
        showNotice($('#error'), '');
        $('#updated').textContent = 'Updated ' + clock(new Date());
      } catch (err) {
        if (err.status === 401) { window.location.assign('/login'); return; }
        showNotice($('#error'), err.message);
      } finally {
        state.pending -= 1;
      }
    }

    keepFresh(load, function () { return state.pending > 0; });
  }

`;
