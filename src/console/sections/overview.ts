import type { ConsoleSection } from '../sections.js';

/**
 * The overview, /console: the board of the day (stop every agent, what waits for approval, the
 * agents with stop and restart). Filled by browser/section-overview.ts. "Stop every agent" is a
 * card for those who may use it; anyone else sees it only while every agent is stopped, as news.
 */
export const section: ConsoleSection = {
  id: 'overview',
  title: 'Overview',
  visible: (view) => view.current !== undefined,
  body(view) {
    const approvals = view.can.readApprovals
      ? `<section class="card" id="approvals" aria-labelledby="approvals-title">
<div class="section-head"><h2 id="approvals-title">Waiting for approval <span class="count" id="approvals-count"></span></h2></div>
<div class="section-body" id="approvals-body"><p class="muted">Loading…</p></div>
</section>`
      : '';
    return `<section class="card" id="stop-all" aria-labelledby="stop-all-title"${view.can.stopAll ? '' : ' hidden'}>
<div class="section-head"><h2 id="stop-all-title">Stop every agent</h2></div>
<div class="section-body" id="stop-all-body"><p class="muted">Loading…</p></div>
</section>
${approvals}
<section class="card" id="agents" aria-labelledby="agents-title">
<div class="section-head"><h2 id="agents-title">Agents <span class="count" id="agents-count"></span></h2></div>
<div class="section-body" id="agents-body"><p class="muted">Loading…</p></div>
</section>`;
  },
};
