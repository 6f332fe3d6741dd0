import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';

/**
 * Templates, /console/templates (every member reads them, as GET /api/w/{wid}/templates; owners
 * and admins write them, POST): the workspace's mandate templates, each rule in a plain sentence,
 * and the rule editor (amounts typed in the currency's units, merchants, domains, actions, the
 * approval line, a period limit) with a preview of what the rule allows.
 * Filled by browser/section-templates.ts.
 *
 * data-can-manage: the person may write templates (templates.manage); the API checks again.
 */
export const section: ConsoleSection = {
  id: 'templates',
  title: 'Templates',
  visible: (view) => viewAllows(view, 'workspace.read'),
  body(view) {
    const manage = viewAllows(view, 'templates.manage');
    const editor = manage
      ? `<section class="card" id="template-new" aria-labelledby="template-new-title" data-permission="templates.manage">
<div class="section-head"><h2 id="template-new-title">New template</h2></div>
<div class="section-body">
<form id="template-form" class="stack-form" novalidate>
<p id="template-error" class="notice notice-error" role="alert" hidden></p>
<div class="field"><label for="template-name">Name</label><input id="template-name" type="text" maxlength="200" required autocomplete="off" placeholder="Small payments"></div>
<div id="template-rules"></div>
<div class="inline-form"><button type="button" class="button" id="template-add-rule">Add another rule</button></div>
<button type="submit" class="button button-primary" id="template-save">Save template</button>
</form>
</div>
</section>`
      : '';
    return `<div id="templates-section" data-can-manage="${String(manage)}">
<section class="card" id="templates" aria-labelledby="templates-title">
<div class="section-head"><h2 id="templates-title">Templates <span class="count" id="templates-count"></span></h2></div>
<div class="section-body" id="templates-body"><p class="muted">Loading…</p></div>
</section>
${editor}
</div>`;
  },
};
