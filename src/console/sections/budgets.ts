import { escapeHtml } from '../../lib/html.js';
import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';

/**
 * Budgets and their steps, /console/budgets (owners, admins, analysts read; owners and admins set
 * one): each budget's use of its period, the ladder with the step reached, and a form for a new
 * budget (POST /api/w/{wid}/budgets). Filled by browser/section-budgets.ts.
 */
const STEPS = [
  ['nudge', 50, 'a note in x-svc-advisory'],
  ['downgrade', 80, 'cheaper models first'],
  ['approval', 95, 'the owner must approve more spend'],
  ['block', 100, 'refused until the period ends'],
] as const;

function createForm(): string {
  const ladder = STEPS.map(
    ([step, at, what]) =>
      `<div class="filter"><label for="ladder-${step}">${escapeHtml(step[0]!.toUpperCase() + step.slice(1))} at %</label><input id="ladder-${step}" data-step="${step}" type="number" min="1" max="100" step="1" value="${at}" inputmode="numeric"><p class="hint">${escapeHtml(what)}; empty: no such step</p></div>`,
  ).join('\n');
  return `<section class="card" id="budget-new" aria-labelledby="budget-new-title" data-permission="gateway.manage">
<div class="section-head"><h2 id="budget-new-title">New budget</h2></div>
<div class="section-body">
<form id="budget-form" novalidate>
<p id="budget-error" class="notice notice-error" role="alert" hidden></p>
<div class="filters">
<div class="filter"><label for="budget-kind">Scope</label><select id="budget-kind"><option value="workspace">Whole workspace</option><option value="team" selected>Team</option><option value="principal">Principal</option><option value="key">Key</option><option value="agent">Agent</option></select></div>
<div class="filter"><label for="budget-scope-id">Scope id</label><input id="budget-scope-id" placeholder="search" autocomplete="off"></div>
<div class="filter"><label for="budget-amount">Amount in US dollars</label><input id="budget-amount" type="number" min="0.000001" step="any" inputmode="decimal" placeholder="25.00"></div>
<div class="filter"><label for="budget-period">Period</label><select id="budget-period"><option value="day">Day</option><option value="week">Week</option><option value="month" selected>Month</option></select></div>
</div>
<div class="filters">
${ladder}
</div>
<button type="submit" class="button button-primary" id="budget-create">Set budget</button>
</form>
</div>
</section>`;
}

export const section: ConsoleSection = {
  id: 'budgets',
  title: 'Budgets',
  visible: (view) => viewAllows(view, 'usage.read'),
  body: (
    view,
  ) => `<section class="card" id="budgets" aria-labelledby="budgets-title" data-permission="usage.read" data-can-manage="${viewAllows(view, 'gateway.manage')}">
<div class="section-head"><h2 id="budgets-title">Budgets <span class="count" id="budgets-count"></span></h2></div>
<div class="section-body" id="budgets-body"><p class="muted">Loading…</p></div>
</section>
${viewAllows(view, 'gateway.manage') ? createForm() : ''}`,
};
