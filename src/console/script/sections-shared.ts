/**
 * What the console's sections share in the browser: the workspace they work in, the quiet status
 * line, a session that ended, every page of a list, a secret shown once with a copy button, a
 * two-step confirmation, and mandate rules and ledger actors as a person reads them. And the
 * pieces every section writes alike:
 * - itemWriter(section): a section's write(key, label, buttons, method, path, payload, done) on
 *   one item (the error beside the item, the buttons busy, the section's writes counted, a
 *   reload after), given the section's { base, state, itemErrors, load };
 * - submitForm(state, error, buttons, method, url, payload, done, reload): a form's write (its
 *   error line, its buttons busy, the writes counted, the reload after);
 * - stackTable(headers, rows): a list as a table that stacks on narrow screens;
 * - loadPart(state, name, work) and drawList(name, list, empty, items): a section of one list
 *   (budgets, webhooks) read and drawn in #{name}-body, its count in #{name}-count.
 * Browser JavaScript kept as text (String.raw: no backtick and no dollar-brace inside); it runs
 * inside the one function of script/index.ts, beside the other parts.
 */
export const SECTIONS_SHARED = String.raw`
  // ---- shared by the sections ---------------------------------------------------------------

  /** The workspace shown and the person: ids from the body, the API base of the workspace. */
  function workspaceContext() {
    var wid = body.dataset.workspace;
    return { wid: wid, me: body.dataset.user, base: '/api/w/' + encodeURIComponent(wid) };
  }

  /** The quiet line above the sections: what the last write did ('warn' when not as asked). */
  function say(message, kind) {
    var node = $('#status');
    if (!node) return;
    node.textContent = message || '';
    node.className = 'status' + (kind === 'warn' ? ' status-warn' : '');
  }

  /** A 401 means the session ended: the person is sent to sign in again. */
  function sessionEnded(err) {
    if (err && err.status === 401) { window.location.assign('/login'); return true; }
    return false;
  }

  /** Every page of a list route (limit 200 a page, at most 25 pages): the items, in order. */
  async function listAll(path) {
    var out = [];
    var cursor = null;
    for (var i = 0; i < 25; i += 1) {
      var sep = path.indexOf('?') === -1 ? '?' : '&';
      var page = await api('GET', path + sep + 'limit=200' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
      out = out.concat(page.data || []);
      cursor = page.next;
      if (!cursor) break;
    }
    return out;
  }

  /**
   * A section's write on one of its items: write(key, label, buttons, method, path, payload,
   * done). It clears the item's error and the page's error line, keeps the buttons busy and the
   * section's writes counted (state.pending) while it runs, calls done(answer) on success, or
   * keeps label + the error's message in itemErrors[key] for the item's error line; a 401 ends the
   * session. Then it reloads the section (section.load) and resolves to the answer (null on a
   * failure). section: { base (the API base the path follows), state, itemErrors, load }.
   */
  function itemWriter(section) {
    return async function write(key, label, buttons, method, path, payload, done) {
      delete section.itemErrors[key];
      showNotice($('#error'), '');
      setBusy(buttons, true);
      section.state.pending += 1;
      var answer = null;
      try {
        answer = await api(method, section.base + path, payload);
        if (done) done(answer);
      } catch (err) {
        if (sessionEnded(err)) return null;
        section.itemErrors[key] = label + ': ' + err.message;
        say('');
      } finally {
        section.state.pending -= 1;
        setBusy(buttons, false);
      }
      await section.load();
      return answer;
    };
  }

  /**
   * A form's write: it clears the form's error line (error), keeps its buttons busy and the
   * section's writes counted (state.pending) while it runs, then awaits done(answer), or shows the
   * error's message in the form's error line; a 401 ends the session. Then reload(), when given.
   */
  async function submitForm(state, error, buttons, method, url, payload, done, reload) {
    showNotice(error, '');
    setBusy(buttons, true);
    state.pending += 1;
    try {
      var answer = await api(method, url, payload);
      if (done) await done(answer);
    } catch (err) {
      if (sessionEnded(err)) return;
      showNotice(error, err.message);
    } finally {
      state.pending -= 1;
      setBusy(buttons, false);
    }
    if (reload) await reload();
  }

  /**
   * A list as a table that stacks on narrow screens, in its scrolling wrapper: a column heading a
   * header (null: the actions column, named for screen readers only), a row an item.
   */
  function stackTable(headers, rows) {
    return el('div', { class: 'table-wrap' }, el('table', { class: 'table-stack' },
      el('thead', {}, el('tr', {}, headers.map(function (h) {
        return h === null ? el('th', { scope: 'col' }, el('span', { class: 'visually-hidden', text: 'Actions' })) : el('th', { scope: 'col', text: h });
      }))),
      el('tbody', {}, rows)));
  }

  /**
   * A section's reload of its one part: work() reads and draws it, then the time of the update is
   * shown; on a failure the error's message stands in the part (#{name}-body) instead; a 401 ends
   * the session. The section's reads and writes are counted while it runs (state.pending).
   */
  async function loadPart(state, name, work) {
    state.pending += 1;
    try {
      await work();
      updated();
    } catch (err) {
      if (sessionEnded(err)) return;
      replace($('#' + name + '-body'), el('p', { class: 'notice notice-error', role: 'alert', text: err.message }));
    } finally {
      state.pending -= 1;
    }
  }

  /**
   * A part's list: its count in #{name}-count (blank for none), and in #{name}-body its items
   * (items(list)), or the line that says there are none (empty).
   */
  function drawList(name, list, empty, items) {
    $('#' + name + '-count').textContent = list.length ? String(list.length) : '';
    replace($('#' + name + '-body'), list.length ? items(list) : empty);
  }

  function updated() {
    var node = $('#updated');
    if (node) node.textContent = 'Updated ' + clock(new Date());
  }

  /**
   * A secret shown once (a key or a token): its value in a read-only field, a Copy button, and a
   * Done button that forgets it. The value is never stored by the page.
   */
  function secretOnce(label, value, onDone) {
    var field = el('input', { type: 'text', readonly: true, class: 'mono secret-value', value: value, 'aria-label': label, spellcheck: 'false' });
    var copied = el('span', { class: 'muted secret-copied', role: 'status' });
    var copy = el('button', { type: 'button', class: 'button', text: 'Copy' });
    copy.addEventListener('click', async function () {
      field.focus();
      field.select();
      try {
        await navigator.clipboard.writeText(value);
        copied.textContent = 'Copied.';
      } catch (err) {
        copied.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
      }
    });
    var done = el('button', { type: 'button', class: 'button button-quiet', text: 'Done' });
    var box = el('div', { class: 'secret', role: 'group', 'aria-label': label },
      el('p', { class: 'secret-title' }, el('strong', { text: label }), ' · shown once: store it now, it cannot be shown again.'),
      el('div', { class: 'secret-row' }, field, copy, done),
      copied);
    done.addEventListener('click', function () { box.remove(); if (onDone) onDone(); });
    return box;
  }

  /**
   * A button that asks once more before it acts: the first click shows Confirm and Cancel beside
   * it. onConfirm(buttons) runs the write.
   */
  function confirmButton(label, confirmLabel, onConfirm, kind) {
    var wrap = el('span', { class: 'confirm' });
    var first = el('button', { type: 'button', class: 'button ' + (kind || 'button-outline-danger'), text: label });
    first.addEventListener('click', function () {
      var yes = el('button', { type: 'button', class: 'button button-danger', text: confirmLabel });
      var no = el('button', { type: 'button', class: 'button button-quiet', text: 'Cancel' });
      no.addEventListener('click', function () { replace(wrap, first); });
      yes.addEventListener('click', function () { onConfirm([yes, no]); });
      replace(wrap, yes, no);
      yes.focus();
    });
    wrap.append(first);
    return wrap;
  }

  /** A rule's limit in each of its currencies (a limit counts minor units of the action's currency). */
  function amountText(amount, currencies) {
    if (!currencies || !currencies.length) return String(amount);
    return currencies.map(function (currency) { return money({ amount: amount, currency: currency }); }).join(' or ');
  }

  /** A mandate rule as one line a person reads (what, where, how much, when a person decides). */
  function ruleText(rule) {
    if (!rule) return '';
    var parts = [];
    var actions = rule.actions || [];
    parts.push(actions.indexOf('*') !== -1 ? 'any action' : actions.join(', '));
    if (rule.merchants) parts.push(rule.merchants.indexOf('*') !== -1 ? 'any merchant' : 'at ' + rule.merchants.join(', '));
    if (rule.domains) parts.push(rule.domains.indexOf('*') !== -1 ? 'any domain' : 'on ' + rule.domains.join(', '));
    var currency = rule.currencies && rule.currencies.length === 1 ? rule.currencies[0] : null;
    if (rule.currencies && !currency) parts.push('in ' + rule.currencies.join(', '));
    if (typeof rule.maxAmount === 'number') parts.push('up to ' + amountText(rule.maxAmount, rule.currencies) + ' each');
    else if (currency) parts.push('in ' + currency);
    if (rule.periodLimit) parts.push(amountText(rule.periodLimit.amount, rule.currencies) + ' a ' + rule.periodLimit.period);
    if (rule.approval) {
      var above = amountText(rule.approval.above, rule.currencies);
      var asks = 'a person approves above ' + above;
      if (rule.approval.count === 2) asks = 'two people approve above ' + above;
      if (rule.approval.approvers && rule.approval.approvers.length) asks += ' (named approvers)';
      if (rule.approval.separationOfDuties) asks += ', not the person it acts for';
      parts.push(asks);
    }
    return parts.join(' · ');
  }

  /** A ledger actor (user:usr_…, token:name, a bare user id) as a person reads it. */
  function actorName(by, me, people) {
    if (!by) return 'someone';
    var text = String(by);
    var id = text.indexOf('user:') === 0 ? text.slice(5) : text;
    if (id === me) return 'you';
    if (people && people[id]) return people[id];
    if (text.indexOf('token:') === 0) return 'service token ' + text.slice(6);
    return text;
  }

`;
