/**
 * The usage section (/console/usage): gateway calls and spend over a window, split by model, team
 * or key, from GET /api/w/{wid}/usage. The chart is SVG built with DOM calls (no markup from data,
 * no style attribute: colours come from app.css classes), stacked bars per hour or day for the
 * five largest groups and the rest; every number it draws is also in the tables below it, which
 * are what a screen reader (and a test) reads. Also defines usd(), the dollar amounts of the
 * budgets section.
 * Browser JavaScript kept as text (String.raw: no backtick and no dollar-brace inside); it runs
 * inside the one function of script/index.ts, beside the other parts.
 */
export const SECTION_USAGE = String.raw`
  /** Micro-dollars as dollars: cents when at least a cent, else to the micro-dollar. */
  function usd(micros) {
    var digits = micros === 0 || Math.abs(micros) >= 10000 ? 2 : 6;
    return new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: digits, maximumFractionDigits: digits }).format(micros / 1e6);
  }

  function count(n) { return new Intl.NumberFormat('en-US').format(n); }

  var SVG_NS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    for (var i = 2; i < arguments.length; i += 1) if (arguments[i]) node.append(arguments[i]);
    return node;
  }

  function section_usage() {
    var base = '/api/w/' + encodeURIComponent(body.dataset.workspace);
    var state = { data: null, pending: 0 };
    var WINDOWS = { '24h': [86400000, 'hour'], '7d': [7 * 86400000, 'day'], '30d': [30 * 86400000, 'day'] };
    var SERIES = 5;

    function sessionEnded(err) {
      if (err && err.status === 401) { window.location.assign('/login'); return true; }
      return false;
    }

    async function load() {
      var w = WINDOWS[$('#usage-window').value] || WINDOWS['7d'];
      var to = new Date();
      var from = new Date(to.getTime() - w[0]);
      var path = base + '/usage?from=' + encodeURIComponent(from.toISOString()) + '&to=' + encodeURIComponent(to.toISOString()) +
        '&bucket=' + w[1] + '&by=' + encodeURIComponent($('#usage-by').value);
      state.pending += 1;
      try {
        state.data = await api('GET', path);
        showNotice($('#error'), '');
        render();
        $('#updated').textContent = 'Updated ' + clock(new Date());
      } catch (err) {
        if (sessionEnded(err)) return;
        showNotice($('#error'), 'Usage: ' + err.message);
      } finally {
        state.pending -= 1;
      }
    }

    function label(d, start) {
      var iso = start.slice(0, 16).replace('T', ' ');
      return d.bucket === 'hour' ? iso.slice(5) : iso.slice(0, 10);
    }

    // Tokens in counts the prompt cache's; how many of them it read or wrote is said beside.
    function cached(t) {
      var read = t.cacheReadTokens || 0;
      var written = t.cacheWriteTokens || 0;
      if (!read && !written) return '';
      return ' (' + count(read) + ' read from the prompt cache, ' + count(written) + ' written to it)';
    }

    function render() {
      var d = state.data;
      var metric = $('#usage-metric').value;
      var t = d.total;
      replace($('#usage-summary'),
        el('p', { id: 'usage-total' },
          el('strong', { text: count(t.calls) + (t.calls === 1 ? ' call' : ' calls') }), ' · ',
          el('strong', { text: usd(t.costMicros) }), ' spent · ',
          count(t.inputTokens) + ' tokens in' + cached(t) + ', ' + count(t.outputTokens) + ' out',
          t.failed ? el('span', { class: 'badge badge-warn', text: count(t.failed) + ' failed' }) : null));
      // The five groups with most spend have their own colour; the rest are one series.
      var top = d.groups.slice(0, SERIES).map(function (g) { return g.group; });
      var names = top.concat(d.groups.length > SERIES ? ['other'] : []);
      var seriesOf = function (name) { var i = top.indexOf(name); return i < 0 ? SERIES : i; };
      renderChart(d, metric, names, seriesOf);
      renderGroups(d, seriesOf);
      renderPeriods(d);
    }

    function renderChart(d, metric, names, seriesOf) {
      var target = $('#usage-chart');
      if (d.total.calls === 0) { replace(target, el('p', { class: 'empty', id: 'usage-empty', text: 'No gateway calls in this window.' })); return; }
      // Drawn at the width it is shown at, so that its text keeps the page's size on a phone too.
      var W = Math.max(280, Math.round(target.clientWidth || 720)), H = 240, left = 64, bottom = 28, top = 8, right = 8;
      var n = d.buckets.length;
      var max = Math.max.apply(null, d.buckets.map(function (b) { return b[metric]; }).concat([metric === 'calls' ? 4 : 1]));
      var plotW = W - left - right, plotH = H - top - bottom;
      var slot = plotW / n;
      var barW = Math.max(1, slot * 0.7);
      var fmt = metric === 'calls' ? count : usd;
      var chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, class: 'chart-svg', role: 'img', 'aria-labelledby': 'usage-chart-title' },
        svg('title', { id: 'usage-chart-title' }, document.createTextNode((metric === 'calls' ? 'Calls' : 'Spend') + ' per ' + d.bucket + ', by ' + d.by)));
      for (var g = 0; g <= 4; g += 1) {
        var y = top + plotH - (plotH * g) / 4;
        chart.append(svg('line', { x1: left, x2: W - right, y1: y, y2: y, class: 'grid' }));
        chart.append(svg('text', { x: left - 6, y: y + 4, class: 'axis axis-y', 'text-anchor': 'end' }, document.createTextNode(fmt(Math.round((max * g) / 4)))));
      }
      var every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(plotW / 90))));
      d.buckets.forEach(function (b, i) {
        var x = left + i * slot + (slot - barW) / 2;
        var y = top + plotH;
        var parts = Object.keys(b.groups).sort(function (p, q) { return seriesOf(p) - seriesOf(q); });
        parts.forEach(function (name) {
          var v = b.groups[name][metric];
          if (!v) return;
          var h = (plotH * v) / max;
          y -= h;
          chart.append(svg('rect', { x: x, y: y, width: barW, height: Math.max(h, 0.5), class: 'bar series-' + seriesOf(name) },
            svg('title', {}, document.createTextNode(label(d, b.start) + ' · ' + name + ': ' + fmt(v)))));
        });
        if (i % every === 0)
          chart.append(svg('text', { x: left + i * slot + slot / 2, y: H - 8, class: 'axis axis-x', 'text-anchor': 'middle' }, document.createTextNode(label(d, b.start))));
      });
      var legend = el('ul', { class: 'legend', id: 'usage-legend' }, names.map(function (name, i) {
        return el('li', {}, el('span', { class: 'swatch series-' + (name === 'other' && i === SERIES ? SERIES : i), 'aria-hidden': 'true' }), name === 'other' ? 'Others' : name);
      }));
      replace(target, el('div', { class: 'chart-frame' }, chart), legend);
    }

    function renderGroups(d, seriesOf) {
      var target = $('#usage-groups');
      if (d.groups.length === 0) { replace(target); return; }
      var heads = [d.by === 'model' ? 'Model' : d.by === 'team' ? 'Team' : 'Key', 'Calls', 'Failed', 'Tokens in', 'Tokens out', 'Spend'];
      var table = el('table', { class: 'numbers', id: 'usage-table' },
        // Failed and token counts are 'minor' columns, left out on a phone (the totals above keep them).
        el('thead', {}, el('tr', {}, heads.map(function (h, i) { return el('th', { scope: 'col', class: i === 0 ? null : i > 1 && i < 5 ? 'num minor' : 'num', text: h }); }))),
        el('tbody', {}, d.groups.map(function (g) {
          return el('tr', { data: { group: g.group } },
            el('th', { scope: 'row', class: 'wrap' }, el('span', { class: 'swatch series-' + seriesOf(g.group), 'aria-hidden': 'true' }), el('span', { class: d.by === 'key' ? 'mono' : null, text: g.group })),
            el('td', { class: 'num', text: count(g.calls) }),
            el('td', { class: 'num minor', text: count(g.failed) }),
            el('td', { class: 'num minor', text: count(g.inputTokens) }),
            el('td', { class: 'num minor', text: count(g.outputTokens) }),
            el('td', { class: 'num', text: usd(g.costMicros) }));
        })));
      replace(target, el('div', { class: 'table-wrap' }, table));
    }

    function renderPeriods(d) {
      var table = el('table', { class: 'numbers', id: 'usage-periods-table' },
        el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: d.bucket === 'hour' ? 'Hour (UTC)' : 'Day (UTC)' }), el('th', { scope: 'col', class: 'num', text: 'Calls' }), el('th', { scope: 'col', class: 'num', text: 'Spend' }))),
        el('tbody', {}, d.buckets.slice().reverse().map(function (b) {
          return el('tr', { data: { start: b.start } }, el('td', { text: label(d, b.start) }), el('td', { class: 'num', text: count(b.calls) }), el('td', { class: 'num', text: usd(b.costMicros) }));
        })));
      replace($('#usage-periods-body'), el('div', { class: 'table-wrap' }, table));
    }

    $('#usage-window').addEventListener('change', load);
    $('#usage-by').addEventListener('change', load);
    $('#usage-metric').addEventListener('change', function () { if (state.data) render(); });
    $('#usage-controls').addEventListener('submit', function (event) { event.preventDefault(); load(); });
    keepFresh(load, function () { return state.pending > 0; });
  }

`;
