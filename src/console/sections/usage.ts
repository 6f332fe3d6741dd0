import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';

/**
 * Gateway usage and spend over time, /console/usage (owners, admins, analysts: reports): a
 * window, a split by model, team or key, a chart drawn by the page script as SVG, and the same
 * numbers as tables. Filled by browser/section-usage.ts from GET /api/w/{wid}/usage.
 */
export const section: ConsoleSection = {
  id: 'usage',
  title: 'Usage',
  visible: (view) => viewAllows(view, 'usage.read'),
  body: () => `<section class="card" id="usage" aria-labelledby="usage-title" data-permission="usage.read">
<div class="section-head"><h2 id="usage-title">Gateway usage and spend</h2></div>
<div class="section-body">
<form id="usage-controls" class="filters" novalidate>
<div class="filter"><label for="usage-window">Window</label>
<select id="usage-window"><option value="24h">Last 24 hours, by hour</option><option value="7d" selected>Last 7 days, by day</option><option value="30d">Last 30 days, by day</option></select></div>
<div class="filter"><label for="usage-by">Split by</label>
<select id="usage-by"><option value="model" selected>Model</option><option value="team">Team</option><option value="key">Key</option></select></div>
<div class="filter"><label for="usage-metric">Chart</label>
<select id="usage-metric"><option value="costMicros" selected>Spend</option><option value="calls">Calls</option></select></div>
</form>
<div id="usage-summary" class="summary"></div>
<div id="usage-chart" class="chart"></div>
<div id="usage-groups"><p class="muted">Loading…</p></div>
<details id="usage-periods" class="periods"><summary>Every period</summary><div id="usage-periods-body"></div></details>
</div>
</section>`,
};
