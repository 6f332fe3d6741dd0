import { $, el, replace, later, api, failureOf, setBusy, showNotice, type Data } from './helpers.js';
import { plainMessage } from './plain-errors.js';
import { workspaceContext, say, sessionEnded } from './sections-shared.js';
/**
 * The MCP tools section's "Add a server" card in the browser: the server added (its tools as
 * they are now pinned and approved by the person adding it), then what the connection test
 * found: the tools pinned, or why the server cannot be used (the API's `problem`: its HTTP
 * status and the start of its answer, no answer in time, a TLS or name error, an answer that is
 * not MCP). "Test again" lists its tools afresh. The list above is refreshed after each.
 */
export function section_mcp_add() {
  const ctx = workspaceContext();
  const form = $<HTMLFormElement>('#mcp-add-form');
  const result = $('#mcp-add-result');

  function problemText(problem: Data): string {
    return problem.message + (problem.body ? ' (it answered: ' + problem.body + ')' : '');
  }

  /** The list of servers above, read again (the section's Refresh). */
  function refreshList() {
    $('#refresh').click();
  }

  function show(name: string, ok: boolean, line: string) {
    const again = el('button', { type: 'button', class: 'button', id: 'mcp-test', text: 'Test again' });
    again.addEventListener(
      'click',
      later(async function () {
        setBusy([again], true);
        try {
          const answer = await api('GET', ctx.base + '/mcp-servers/' + encodeURIComponent(name) + '/tools');
          const tools: Data[] = answer.data || [];
          const waiting = tools.filter(function (t) {
            return t.status !== 'approved';
          }).length;
          if (answer.problem) show(name, false, name + ' cannot be used: ' + problemText(answer.problem));
          else
            show(
              name,
              true,
              name +
                ' answers: ' +
                tools.length +
                ' tool' +
                (tools.length === 1 ? '' : 's') +
                (waiting ? ', ' + waiting + ' waiting for your approval below.' : ', all approved.'),
            );
          refreshList();
        } catch (caught) {
          const err = failureOf(caught);
          if (sessionEnded(err)) return;
          show(name, false, plainMessage(err.message));
        }
      }),
    );
    replace(
      result,
      el('p', {
        class: 'notice' + (ok ? '' : ' notice-error'),
        id: 'mcp-test-result',
        'data-ok': String(ok),
        role: 'status',
        text: line,
      }),
      again,
    );
  }

  form.addEventListener(
    'submit',
    later(async function (event) {
      event.preventDefault();
      const error = $('#mcp-add-error');
      const name = $<HTMLInputElement>('#mcp-add-name').value.trim();
      const url = $<HTMLInputElement>('#mcp-add-url').value.trim();
      const secret = $<HTMLInputElement>('#mcp-add-secret').value;
      if (!name || !url) {
        showNotice(error, 'Give the server a name and its URL.');
        return;
      }
      const submit = $<HTMLButtonElement>('#mcp-add-submit');
      showNotice(error, '');
      setBusy([submit], true);
      try {
        const payload: Record<string, unknown> = { name: name, url: url };
        if (secret) payload.secret = secret;
        const added = await api('POST', ctx.base + '/mcp-servers', payload);
        form.reset();
        say('Server added: ' + added.name);
        if (added.problem) {
          show(added.name, false, 'Added, but ' + added.name + ' cannot be used yet: ' + problemText(added.problem));
        } else {
          const tools: string[] = added.pinnedTools || [];
          show(
            added.name,
            true,
            'Connected: ' +
              tools.length +
              ' tool' +
              (tools.length === 1 ? '' : 's') +
              ' pinned and approved' +
              (tools.length ? ' (' + tools.join(', ') + ').' : '.'),
          );
        }
        refreshList();
      } catch (caught) {
        const err = failureOf(caught);
        if (sessionEnded(err)) return;
        showNotice(error, plainMessage(err.message));
      } finally {
        setBusy([submit], false);
      }
    }),
  );
}
