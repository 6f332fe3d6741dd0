/**
 * The page script's helpers: elements built with text nodes only, the one API call (JSON, the
 * CSRF header on writes, error.message on failure), notices, and formatting of money and time.
 * Browser JavaScript kept as text (String.raw: no backtick and no dollar-brace inside); it runs
 * inside the one function of script/index.ts, beside the other parts.
 */
export const HELPERS = String.raw`
  // ---- small DOM and HTTP helpers ----------------------------------------------------------

  function $(selector, root) { return (root || document).querySelector(selector); }

  /** An element with properties, attributes and children; strings become text nodes. */
  function el(tag, props) {
    var node = document.createElement(tag);
    var p = props || {};
    Object.keys(p).forEach(function (key) {
      var value = p[key];
      if (value === undefined || value === null || value === false) return;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = String(value);
      else if (key.slice(0, 2) === 'on') node.addEventListener(key.slice(2), value);
      else if (key === 'data') Object.keys(value).forEach(function (k) { node.dataset[k] = String(value[k]); });
      else if (key === 'value') node.value = value;
      else node.setAttribute(key, value === true ? '' : String(value));
    });
    for (var i = 2; i < arguments.length; i += 1) append(node, arguments[i]);
    return node;
  }

  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }

  function replace(node) {
    node.replaceChildren();
    for (var i = 1; i < arguments.length; i += 1) append(node, arguments[i]);
  }

  /** One API call: JSON in and out; writes carry the CSRF header. Rejects with error.message. */
  async function api(method, path, payload) {
    var headers = { accept: 'application/json' };
    var init = { method: method, headers: headers, credentials: 'same-origin', cache: 'no-store' };
    if (method !== 'GET') headers['x-svc-csrf'] = '1';
    if (method !== 'GET') {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(payload === undefined ? {} : payload);
    }
    var res;
    try {
      res = await fetch(path, init);
    } catch (err) {
      throw failure('The server could not be reached. Check the connection and try again.', 'network', 0);
    }
    var data = null;
    try { data = await res.json(); } catch (err) { data = null; }
    if (!res.ok) {
      var e = data && data.error;
      throw failure(e && typeof e.message === 'string' ? e.message : 'The server answered ' + res.status + '.', e && e.type, res.status);
    }
    return data;
  }

  function failure(message, type, status) {
    var err = new Error(message);
    err.type = type;
    err.status = status;
    return err;
  }

  function showNotice(node, message, kind) {
    if (!node) return;
    node.textContent = message || '';
    node.hidden = !message;
    node.className = 'notice' + (kind === 'info' ? '' : ' notice-error');
  }

  function setBusy(buttons, busy) {
    buttons.forEach(function (b) { if (b) b.disabled = busy; });
  }

  // ---- formatting ---------------------------------------------------------------------------

  function money(payment) {
    if (!payment || typeof payment.amount !== 'number') return null;
    try {
      var format = new Intl.NumberFormat(undefined, { style: 'currency', currency: payment.currency });
      var digits = format.resolvedOptions().maximumFractionDigits;
      return format.format(payment.amount / Math.pow(10, digits));
    } catch (err) {
      return payment.amount + ' ' + (payment.currency || '');
    }
  }

  var relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  function ago(iso) {
    var at = Date.parse(iso);
    if (isNaN(at)) return '';
    var seconds = Math.round((at - Date.now()) / 1000);
    var abs = Math.abs(seconds);
    if (abs < 45) return 'just now';
    if (abs < 3600) return relative.format(Math.round(seconds / 60), 'minute');
    if (abs < 86400) return relative.format(Math.round(seconds / 3600), 'hour');
    return relative.format(Math.round(seconds / 86400), 'day');
  }

  function time(iso) {
    return el('time', { datetime: iso, title: iso, text: ago(iso) });
  }

  function clock(date) {
    return date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  }

`;
