import { escapeHtml } from '../../lib/html.js';
import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';

/**
 * The ledger, /console/ledger (owners, admins, auditors, as GET /api/w/{wid}/ledger): the newest
 * signed checkpoint with "Verify now" (POST …/ledger/verify, the check `svc ledger verify` makes),
 * and the records, newest first, with filters. Filled by browser/section-ledger.ts, which shows
 * each actor and subject by name (the id on hover): people from the names this page carries
 * (#people-names), agents from the agents list.
 */
export const section: ConsoleSection = {
  id: 'ledger',
  title: 'Ledger',
  visible: (view) => viewAllows(view, 'ledger.read'),
  names: true,
  body: (view) => `<ul id="people-names" hidden>${view.people
    .map((p) => `<li data-id="${escapeHtml(p.id)}">${escapeHtml(p.name)}</li>`)
    .join('')}</ul>
<section class="card" id="ledger-verify" aria-labelledby="ledger-verify-title" data-permission="ledger.read">
<div class="section-head"><h2 id="ledger-verify-title">Integrity</h2>
<button type="button" class="button button-primary" id="verify-now">Verify now</button></div>
<div class="section-body">
<div id="checkpoint-body"><p class="muted">Loading…</p></div>
<div id="verify-result" class="verify-result" role="status" aria-live="polite"></div>
</div>
</section>
<section class="card" id="ledger-records" aria-labelledby="ledger-records-title" data-permission="ledger.read">
<div class="section-head"><h2 id="ledger-records-title">Records</h2></div>
<div class="section-body">
<form id="ledger-filter" class="filters" novalidate>
<div class="filter"><label for="filter-kind">Kind</label><input id="filter-kind" name="kind" placeholder="agent.stopped or agent" autocomplete="off"></div>
<div class="filter"><label for="filter-actor">Actor</label><input id="filter-actor" name="actor" placeholder="user:usr_… or agt_…" autocomplete="off"></div>
<div class="filter"><label for="filter-subject">Subject</label><input id="filter-subject" name="subject" placeholder="an id" autocomplete="off"></div>
<div class="filter"><label for="filter-from">From</label><input id="filter-from" name="from" type="date"></div>
<div class="filter"><label for="filter-to">Until</label><input id="filter-to" name="to" type="date"></div>
<div class="filter-buttons"><button type="submit" class="button button-primary" id="filter-apply">Filter</button>
<button type="button" class="button button-quiet" id="filter-clear">Clear</button></div>
</form>
<div id="records-body"><p class="muted">Loading…</p></div>
</div>
</section>`,
};
