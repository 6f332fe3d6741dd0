import type { ConsoleView } from '../view.js';
import { viewAllows } from '../view.js';
import { escapeHtml } from '../../lib/html.js';
import { KIND_PERMISSION } from '../../integrations/kind-permissions.js';
import { INTEGRATION_KINDS, type IntegrationKind } from '../../integrations/kinds.js';

/**
 * The integrations section's "Set up" card (PUT /api/w/{wid}/integrations/{kind}, owners and
 * admins; the identity provider, owners only, as the API): the kind chosen, its settings, then
 * the secret a generated kind answers (shown once) and the address to paste into the other
 * system. Filled by browser/section-integrations-setup.ts. Slack, the chat relay and the identity
 * provider are offered to owners only, as the API permits them (their secrets speak for people).
 */
/** What each kind asks for: one label per kind. */
const LABELS: Record<IntegrationKind, string> = {
  issuer: 'Card issuer (svc makes the signing secret)',
  stripe: "Stripe (paste Stripe's signing secret)",
  github: 'GitHub deployments (svc makes the webhook secret)',
  slack: "Slack (paste Slack's signing secret)",
  'chat-relay': 'Chat relay (svc makes the secret; approval cards go to your relay)',
  ssf: 'Identity provider, Shared Signals (its issuer and keys)',
  acp: 'Merchant checkout events, ACP (svc makes the webhook secret)',
};
/** The kinds the card offers, in the order of the list of kinds, with what each asks for. */
const OPTIONS: ReadonlyArray<[IntegrationKind, string]> = INTEGRATION_KINDS.map((kind) => [kind, LABELS[kind]]);

export function integrationSetupCard(view: ConsoleView): string {
  // The API's own table of who sets each kind up: a kind the person may not set up is not offered.
  // Each option names the permission its PUT needs; the form's settings and Save name the chosen
  // kind's (browser/section-integrations-setup.ts keeps it in step with the choice).
  const offered = OPTIONS.map(
    ([kind, label]) => [kind, label, KIND_PERMISSION[kind] ?? 'integrations.manage'] as const,
  ).filter(([, , permission]) => viewAllows(view, permission));
  const options = offered
    .map(
      ([kind, label, permission]) =>
        `<option value="${kind}" data-permission="${permission}">${escapeHtml(label)}</option>`,
    )
    .join('\n');
  const first = offered[0]?.[2] ?? 'integrations.manage';
  return `<section class="card" id="integration-setup" aria-labelledby="integration-setup-title" data-permission="integrations.manage">
<div class="section-head"><h2 id="integration-setup-title">Set up an integration</h2></div>
<div class="section-body">
<form id="integration-form" class="stack-form" novalidate data-permission="${first}">
<p id="integration-error" class="notice notice-error" role="alert" hidden></p>
<div class="field" data-permission="integrations.manage"><label for="integration-kind">Integration</label><select id="integration-kind">
${options}
</select></div>
<div id="integration-fields"></div>
<button type="submit" class="button button-primary" id="integration-save">Save</button>
</form>
<div id="integration-result"></div>
</div>
</section>`;
}
