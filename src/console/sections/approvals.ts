import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';

/**
 * Approvals, /console/approvals: what waits for a person, oldest first, each with the rule that
 * asked and the gate's reason; approve or deny with a note (members: the approvals of agents
 * that act for them, as the API answers). Filled by browser/section-approvals.ts.
 */
export const section: ConsoleSection = {
  id: 'approvals',
  title: 'Approvals',
  visible: (view) => viewAllows(view, 'approvals.read'),
  body(view) {
    return `<div id="approvals-section" data-can-decide="${String(viewAllows(view, 'approvals.decide'))}" data-can-read-members="${String(viewAllows(view, 'members.manage'))}">
<section class="card" id="approvals" aria-labelledby="approvals-title">
<div class="section-head"><h2 id="approvals-title">Waiting for approval <span class="count" id="approvals-count"></span></h2><span class="muted hint-inline">Oldest first</span></div>
<div class="section-body" id="approvals-body"><p class="muted">Loading…</p></div>
</section>
</div>`;
  },
};
