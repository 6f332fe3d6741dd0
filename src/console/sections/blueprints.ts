import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';

/**
 * Blueprints, /console/blueprints (every member reads them, as GET /api/w/{wid}/blueprints;
 * owners and admins create them, POST): a blueprint's name, the tags it gives an agent and the
 * templates whose rules become the agent's mandate. An agent is made from one on the agents page.
 * Filled by browser/section-blueprints.ts.
 *
 * data-can-manage: the person may create blueprints (templates.manage); the API checks again.
 */
export const section: ConsoleSection = {
  id: 'blueprints',
  title: 'Blueprints',
  visible: (view) => viewAllows(view, 'workspace.read'),
  body(view) {
    const manage = viewAllows(view, 'templates.manage');
    const form = manage
      ? `<section class="card" id="blueprint-new" aria-labelledby="blueprint-new-title" data-permission="templates.manage">
<div class="section-head"><h2 id="blueprint-new-title">New blueprint</h2></div>
<div class="section-body">
<form id="blueprint-form" class="stack-form" novalidate>
<p id="blueprint-error" class="notice notice-error" role="alert" hidden></p>
<div class="field-row">
<div class="field"><label for="blueprint-name">Name</label><input id="blueprint-name" type="text" maxlength="200" required autocomplete="off" placeholder="Invoice payer"></div>
<div class="field"><label for="blueprint-tags">Tags</label><input id="blueprint-tags" type="text" autocomplete="off" placeholder="finance, invoices"><p class="hint">Words without spaces, separated by commas or spaces.</p></div>
</div>
<fieldset class="choices" id="blueprint-templates"><legend>Templates</legend><p class="muted">Loading…</p></fieldset>
<button type="submit" class="button button-primary" id="blueprint-save">Create blueprint</button>
</form>
</div>
</section>`
      : '';
    return `<div id="blueprints-section" data-can-manage="${String(manage)}">
<section class="card" id="blueprints" aria-labelledby="blueprints-title">
<div class="section-head"><h2 id="blueprints-title">Blueprints <span class="count" id="blueprints-count"></span></h2></div>
<div class="section-body" id="blueprints-body"><p class="muted">Loading…</p></div>
</section>
${form}
</div>`;
  },
};
