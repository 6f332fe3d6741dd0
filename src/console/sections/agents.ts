import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';

/**
 * Agents, /console/agents: the agents the person sees (owners, admins and auditors every agent;
 * everyone else those that act for them, as the API answers), a new agent from a blueprint, and
 * one agent's page: its mandate edited with the workspace's templates, its keys minted (shown
 * once) and revoked, stop and restart with a reason. Filled by browser/section-agents.ts.
 *
 * Flags for the script (the API checks every request again):
 * - data-can-manage: may create agents and manage those that act for them (owners and admins:
 *   every agent).
 * - data-can-manage-all: owners and admins; they also choose whom a new agent acts for.
 * - data-reads-all: sees every agent (owners, admins, auditors), not only those acting for them.
 */
export const section: ConsoleSection = {
  id: 'agents',
  title: 'Agents',
  visible: (view) => viewAllows(view, 'workspace.read'),
  body(view) {
    const manage = viewAllows(view, 'agents.manage');
    const all = viewAllows(view, 'agents.readAll') && viewAllows(view, 'members.manage');
    const create = manage
      ? `<section class="card" id="agent-new" aria-labelledby="agent-new-title">
<div class="section-head"><h2 id="agent-new-title">New agent</h2></div>
<div class="section-body">
<form id="agent-new-form" class="stack-form" novalidate data-permission="agents.manage">
<p id="agent-new-error" class="notice notice-error" role="alert" hidden></p>
<div class="field-row">
<div class="field"><label for="agent-new-name">Name</label><input id="agent-new-name" type="text" maxlength="200" required autocomplete="off"></div>
<div class="field"><label for="agent-new-blueprint">Blueprint</label><select id="agent-new-blueprint"><option value="">None: no mandate yet</option></select></div>
${all ? '<div class="field"><label for="agent-new-acts-for">Acts for</label><select id="agent-new-acts-for"><option value="">You</option></select></div>' : ''}
</div>
<p class="hint" id="agent-new-hint">A blueprint gives the agent its tags and a mandate from its templates.${all ? '' : ' The agent acts for you.'}</p>
<button type="submit" class="button button-primary" id="agent-new-submit">Create agent</button>
</form>
</div>
</section>`
      : '';
    const readsAll = viewAllows(view, 'agents.readAll');
    return `<div id="agents-section" data-can-manage="${String(manage)}" data-can-manage-all="${String(all)}" data-reads-all="${String(readsAll)}">
<section class="card" id="agent-detail" aria-labelledby="agent-detail-title" hidden>
<div class="section-head"><h2 id="agent-detail-title">Agent</h2><button type="button" class="button button-quiet" id="agent-detail-close" data-permission="session">Close</button></div>
<div class="section-body" id="agent-detail-body"></div>
</section>
<section class="card" id="agents" aria-labelledby="agents-title">
<div class="section-head"><h2 id="agents-title">Agents <span class="count" id="agents-count"></span></h2></div>
<div class="section-body" id="agents-body"><p class="muted">Loading…</p></div>
</section>
${create}
</div>`;
  },
};
