import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';
import { integrationSetupCard } from './integrations-setup.js';

/**
 * Integrations, /console/integrations (owners and admins, as GET /api/w/{wid}/integrations):
 * each inbound integration set up, its secrets' dates and settings, and the requests it refused
 * (bad signature, unknown event) since the server started. Filled by browser/section-integrations.ts.
 */
export const section: ConsoleSection = {
  id: 'integrations',
  title: 'Integrations',
  visible: (view) => viewAllows(view, 'integrations.manage'),
  body: (
    view,
  ) => `<section class="card" id="integrations" aria-labelledby="integrations-title" data-permission="integrations.manage">
<div class="section-head"><h2 id="integrations-title">Integrations <span class="count" id="integrations-count"></span></h2></div>
<div class="section-body" id="integrations-body"><p class="muted">Loading…</p></div>
</section>
${integrationSetupCard(view)}`,
};
