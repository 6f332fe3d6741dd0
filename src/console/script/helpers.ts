import { CURRENCY_EXPONENTS } from '../../lib/money.js';

/**
 * The page script's helpers: elements built with text nodes only, the one API call (JSON, the
 * CSRF header on writes, error.message on failure), notices, and formatting of money and time.
 * Browser JavaScript kept as text (String.raw: no backtick and no dollar-brace inside); it runs
 * inside the one function of script/index.ts, beside the other parts. Money is written as the
 * server writes it (lib/money.ts): "EUR 20.00", with ISO 4217's decimals, handed in as a table.
 */
export const HELPERS =
  'var CURRENCY_EXPONENTS = ' +
  JSON.stringify(CURRENCY_EXPONENTS) +
  ';\n' +
  String.raw`
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

  // Minor units as the server's texts write them: the code, then the exact digits (no division).
  function money(payment) {
    if (!payment || typeof payment.amount !== 'number') return null;
    var code = payment.currency;
    if (!Number.isSafeInteger(payment.amount) || !/^[A-Z]{3}$/.test(code || '')) return payment.amount + ' ' + (code || '') + ' (minor units)';
    var digits = Object.prototype.hasOwnProperty.call(CURRENCY_EXPONENTS, code) ? CURRENCY_EXPONENTS[code] : 2;
    var figures = String(Math.abs(payment.amount)).padStart(digits + 1, '0');
    var exact = (payment.amount < 0 ? '-' : '') + (digits ? figures.slice(0, -digits) + '.' + figures.slice(-digits) : figures);
    var format = new Intl.NumberFormat('en', { style: 'currency', currency: code, currencyDisplay: 'code', minimumFractionDigits: digits, maximumFractionDigits: digits });
    return format.format(exact).replace(/\u00a0/g, ' ');
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
