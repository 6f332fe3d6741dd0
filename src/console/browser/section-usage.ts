import { usd, count, clock } from './text.js';
import { keepFresh } from './console-page.js';
import { body, failureOf, $, el, replace, api, showNotice, later, type Data } from './helpers.js';
import { sessionEnded } from './sections-shared.js';
/**
 * The usage section (/console/usage): gateway calls and spend over a window, split by model, team
 * or key, from GET /api/w/{wid}/usage. The chart is SVG built with DOM calls (no markup from data,
 * no style attribute: colours come from app.css classes), stacked bars per hour or day for the
 * five largest groups and the rest; every number it draws is also in the tables below it, which
 * are what a screen reader (and a test) reads.
 */
const SVG_NS = 'http://www.w3.org/2000/svg';
export function svg(tag: string, attrs: Record<string, string | number>, ...children: Array<Node | null>): SVGElement {
  const node = document.createElementNS(SVG_NS, tag);
  Object.keys(attrs || {}).forEach(function (k) {
    node.setAttribute(k, String(attrs[k]));
  });
  for (const child of children) if (child) node.append(child);
  return node;
}

const base = '/api/w/' + encodeURIComponent(body.dataset.workspace ?? '');
const state: { data: Data; pending: number } = { data: null, pending: 0 };
const WEEK: [number, string] = [7 * 86400000, 'day'];
const WINDOWS: Record<string, [number, string]> = {
  '24h': [86400000, 'hour'],
  '7d': WEEK,
  '30d': [30 * 86400000, 'day'],
};
const SERIES = 5;

async function load() {
  const w = WINDOWS[$<HTMLInputElement>('#usage-window').value] || WEEK;
  const to = new Date();
  const from = new Date(to.getTime() - w[0]);
  const path =
    base +
    '/usage?from=' +
    encodeURIComponent(from.toISOString()) +
    '&to=' +
    encodeURIComponent(to.toISOString()) +
    '&bucket=' +
    w[1] +
    '&by=' +
    encodeURIComponent($<HTMLInputElement>('#usage-by').value);
  state.pending += 1;
  try {
    state.data = await api('GET', path);
    showNotice($('#error'), '');
    render();
    $('#updated').textContent = 'Updated ' + clock(new Date());
  } catch (caught) {
    const err = failureOf(caught);
    if (sessionEnded(err)) return;
    showNotice($('#error'), 'Usage: ' + err.message);
  } finally {
    state.pending -= 1;
  }
}

function label(d: Data, start: Data) {
  const iso = start.slice(0, 16).replace('T', ' ');
  return d.bucket === 'hour' ? iso.slice(5) : iso.slice(0, 10);
}

// Tokens in counts the prompt cache's; how many of them it read or wrote is said beside.
function cached(t: Data) {
  const read = t.cacheReadTokens || 0;
  const written = t.cacheWriteTokens || 0;
  if (!read && !written) return '';
  return ' (' + count(read) + ' read from the prompt cache, ' + count(written) + ' written to it)';
}

function render() {
  const d = state.data;
  const metric = $<HTMLInputElement>('#usage-metric').value;
  const t = d.total;
  replace(
    $('#usage-summary'),
    el(
      'p',
      { id: 'usage-total' },
      el('strong', { text: count(t.calls) + (t.calls === 1 ? ' call' : ' calls') }),
      ' · ',
      el('strong', { text: usd(t.costMicros) }),
      ' spent · ',
      count(t.inputTokens) + ' tokens in' + cached(t) + ', ' + count(t.outputTokens) + ' out',
      t.failed ? el('span', { class: 'badge badge-warn', text: count(t.failed) + ' failed' }) : null,
    ),
  );
  // The five groups with most spend have their own colour; the rest are one series.
  const top = d.groups.slice(0, SERIES).map(function (g: Data) {
    return g.group;
  });
  const names = top.concat(d.groups.length > SERIES ? ['other'] : []);
  const seriesOf = function (name: Data) {
    const i = top.indexOf(name);
    return i < 0 ? SERIES : i;
  };
  renderChart(d, metric, names, seriesOf);
  renderGroups(d, seriesOf);
  renderPeriods(d);
}

function renderChart(d: Data, metric: Data, names: Data, seriesOf: Data) {
  const target = $('#usage-chart');
  if (d.total.calls === 0) {
    replace(target, el('p', { class: 'empty', id: 'usage-empty', text: 'No gateway calls in this window.' }));
    return;
  }
  // Drawn at the width it is shown at, so that its text keeps the page's size on a phone too.
  const W = Math.max(280, Math.round(target.clientWidth || 720)),
    H = 240,
    left = 64,
    bottom = 28,
    top = 8,
    right = 8;
  const n = d.buckets.length;
  const max = Math.max.apply(
    null,
    d.buckets
      .map(function (b: Data) {
        return b[metric];
      })
      .concat([metric === 'calls' ? 4 : 1]),
  );
  const plotW = W - left - right,
    plotH = H - top - bottom;
  const slot = plotW / n;
  const barW = Math.max(1, slot * 0.7);
  const fmt = metric === 'calls' ? count : usd;
  const chart = svg(
    'svg',
    {
      viewBox: '0 0 ' + W + ' ' + H,
      width: W,
      height: H,
      class: 'chart-svg',
      role: 'img',
      'aria-labelledby': 'usage-chart-title',
    },
    svg(
      'title',
      { id: 'usage-chart-title' },
      document.createTextNode((metric === 'calls' ? 'Calls' : 'Spend') + ' per ' + d.bucket + ', by ' + d.by),
    ),
  );
  for (let g = 0; g <= 4; g += 1) {
    const y = top + plotH - (plotH * g) / 4;
    chart.append(svg('line', { x1: left, x2: W - right, y1: y, y2: y, class: 'grid' }));
    chart.append(
      svg(
        'text',
        { x: left - 6, y: y + 4, class: 'axis axis-y', 'text-anchor': 'end' },
        document.createTextNode(fmt(Math.round((max * g) / 4))),
      ),
    );
  }
  const every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(plotW / 90))));
  d.buckets.forEach(function (b: Data, i: Data) {
    const x = left + i * slot + (slot - barW) / 2;
    let y = top + plotH;
    const parts = Object.keys(b.groups).sort(function (p, q) {
      return seriesOf(p) - seriesOf(q);
    });
    parts.forEach(function (name) {
      const v = b.groups[name][metric];
      if (!v) return;
      const h = (plotH * v) / max;
      y -= h;
      chart.append(
        svg(
          'rect',
          { x: x, y: y, width: barW, height: Math.max(h, 0.5), class: 'bar series-' + seriesOf(name) },
          svg('title', {}, document.createTextNode(label(d, b.start) + ' · ' + name + ': ' + fmt(v))),
        ),
      );
    });
    if (i % every === 0)
      chart.append(
        svg(
          'text',
          { x: left + i * slot + slot / 2, y: H - 8, class: 'axis axis-x', 'text-anchor': 'middle' },
          document.createTextNode(label(d, b.start)),
        ),
      );
  });
  const legend = el(
    'ul',
    { class: 'legend', id: 'usage-legend' },
    names.map(function (name: Data, i: Data) {
      return el(
        'li',
        {},
        el('span', {
          class: 'swatch series-' + (name === 'other' && i === SERIES ? SERIES : i),
          'aria-hidden': 'true',
        }),
        name === 'other' ? 'Others' : name,
      );
    }),
  );
  replace(target, el('div', { class: 'chart-frame' }, chart), legend);
}

function renderGroups(d: Data, seriesOf: Data) {
  const target = $('#usage-groups');
  if (d.groups.length === 0) {
    replace(target);
    return;
  }
  const heads = [
    d.by === 'model' ? 'Model' : d.by === 'team' ? 'Team' : 'Key',
    'Calls',
    'Failed',
    'Tokens in',
    'Tokens out',
    'Spend',
  ];
  const table = el(
    'table',
    { class: 'numbers', id: 'usage-table' },
    // Failed and token counts are 'minor' columns, left out on a phone (the totals above keep them).
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        heads.map(function (h, i) {
          return el('th', { scope: 'col', class: i === 0 ? null : i > 1 && i < 5 ? 'num minor' : 'num', text: h });
        }),
      ),
    ),
    el(
      'tbody',
      {},
      d.groups.map(function (g: Data) {
        return el(
          'tr',
          { data: { group: g.group } },
          el(
            'th',
            { scope: 'row', class: 'wrap' },
            el('span', { class: 'swatch series-' + seriesOf(g.group), 'aria-hidden': 'true' }),
            el('span', { class: d.by === 'key' ? 'mono' : null, text: g.group }),
          ),
          el('td', { class: 'num', text: count(g.calls) }),
          el('td', { class: 'num minor', text: count(g.failed) }),
          el('td', { class: 'num minor', text: count(g.inputTokens) }),
          el('td', { class: 'num minor', text: count(g.outputTokens) }),
          el('td', { class: 'num', text: usd(g.costMicros) }),
        );
      }),
    ),
  );
  replace(target, el('div', { class: 'table-wrap' }, table));
}

function renderPeriods(d: Data) {
  const table = el(
    'table',
    { class: 'numbers', id: 'usage-periods-table' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        el('th', { scope: 'col', text: d.bucket === 'hour' ? 'Hour (UTC)' : 'Day (UTC)' }),
        el('th', { scope: 'col', class: 'num', text: 'Calls' }),
        el('th', { scope: 'col', class: 'num', text: 'Spend' }),
      ),
    ),
    el(
      'tbody',
      {},
      d.buckets
        .slice()
        .reverse()
        .map(function (b: Data) {
          return el(
            'tr',
            { data: { start: b.start } },
            el('td', { text: label(d, b.start) }),
            el('td', { class: 'num', text: count(b.calls) }),
            el('td', { class: 'num', text: usd(b.costMicros) }),
          );
        }),
    ),
  );
  replace($('#usage-periods-body'), el('div', { class: 'table-wrap' }, table));
}

export function section_usage() {
  $('#usage-window').addEventListener('change', later(load));
  $('#usage-by').addEventListener('change', later(load));
  $('#usage-metric').addEventListener('change', function () {
    if (state.data) render();
  });
  $('#usage-controls').addEventListener('submit', function (event) {
    event.preventDefault();
    void load();
  });
  keepFresh(load, function () {
    return state.pending > 0;
  });
}
