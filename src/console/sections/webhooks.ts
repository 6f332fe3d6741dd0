import { escapeHtml } from '../../lib/html.js';
import { EVENT_TYPES } from '../../webhooks/service.js';
import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';

/**
 * Outbound webhooks, /console/webhooks (owners and admins, as the API): the endpoints, a form to
 * add one (its secret is shown once), and each endpoint's delivery log with its tries and a
 * redelivery. Filled by browser/section-webhooks.ts.
 */
export const section: ConsoleSection = {
  id: 'webhooks',
  title: 'Webhooks',
  visible: (view) => viewAllows(view, 'integrations.manage'),
  body: () => `<section class="card" id="webhooks" aria-labelledby="webhooks-title" data-permission="integrations.manage">
<div class="section-head"><h2 id="webhooks-title">Webhook endpoints <span class="count" id="webhooks-count"></span></h2></div>
<div class="section-body" id="webhooks-body"><p class="muted">Loading…</p></div>
</section>
<section class="card" id="webhook-new" aria-labelledby="webhook-new-title" data-permission="integrations.manage">
<div class="section-head"><h2 id="webhook-new-title">Add an endpoint</h2></div>
<div class="section-body">
<form id="webhook-form" novalidate>
<p id="webhook-error" class="notice notice-error" role="alert" hidden></p>
<label for="webhook-url">URL</label>
<input id="webhook-url" type="url" placeholder="https://hooks.example.com/svc" autocomplete="off" required>
<fieldset class="events"><legend>Events</legend>
${EVENT_TYPES.map((e) => `<label class="check"><input type="checkbox" name="event" value="${escapeHtml(e)}"> <code>${escapeHtml(e)}</code></label>`).join('\n')}
</fieldset>
<button type="submit" class="button button-primary" id="webhook-add">Add endpoint</button>
</form>
<div id="webhook-secret" class="secret-once" hidden></div>
</div>
</section>`,
};
