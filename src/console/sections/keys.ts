import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';
import { serviceTokenScopes } from '../../service-tokens/service.js';

const SCOPES = serviceTokenScopes;

/**
 * Keys, /console/keys: the workspace's keys (owners and admins: list, mint inference and admin
 * keys, revoke any) and its service tokens (owners only: list, create, revoke). A new key or
 * token is shown once, with a Copy button. Agent keys are minted on the agent's page; they are
 * listed here too, and may be revoked here. Filled by browser/section-keys.ts.
 */
export const section: ConsoleSection = {
  id: 'keys',
  title: 'Keys',
  visible: (view) => viewAllows(view, 'keys.manage') || viewAllows(view, 'service-tokens.manage'),
  body(view) {
    const keys = viewAllows(view, 'keys.manage');
    const tokens = viewAllows(view, 'service-tokens.manage');
    const keysCard = keys
      ? `<section class="card" id="workspace-keys" aria-labelledby="keys-title" data-permission="keys.manage">
<div class="section-head"><h2 id="keys-title">Workspace keys <span class="count" id="keys-count"></span></h2>
<label class="check"><input type="checkbox" id="keys-show-revoked"> Show revoked</label></div>
<div class="section-body">
<div id="keys-secret"></div>
<div id="keys-body"><p class="muted">Loading…</p></div>
<form id="key-new-form" class="stack-form" novalidate>
<h3>Mint a key</h3>
<p id="key-new-error" class="notice notice-error" role="alert" hidden></p>
<div class="field-row">
<div class="field"><label for="key-new-scope">Scope</label><select id="key-new-scope"><option value="inference">inference: the model gateway</option><option value="admin">admin: machine administration</option></select></div>
<div class="field"><label for="key-new-name">Name</label><input id="key-new-name" type="text" maxlength="200" autocomplete="off" placeholder="What uses it"></div>
<div class="field"><label for="key-new-team">Team (optional)</label><input id="key-new-team" type="text" maxlength="200" autocomplete="off"></div>
</div>
<p class="hint">Agent keys are minted on each agent's page.</p>
<button type="submit" class="button button-primary" id="key-new-submit">Mint key</button>
</form>
</div>
</section>`
      : '';
    const scopeBoxes = SCOPES.map(
      (s) => `<label class="check"><input type="checkbox" name="token-scope" value="${s}"> <code>${s}</code></label>`,
    ).join('');
    const tokensCard = tokens
      ? `<section class="card" id="service-tokens" aria-labelledby="tokens-title" data-permission="service-tokens.manage">
<div class="section-head"><h2 id="tokens-title">Service tokens <span class="count" id="tokens-count"></span></h2></div>
<div class="section-body">
<div id="tokens-secret"></div>
<div id="tokens-body"><p class="muted">Loading…</p></div>
<form id="token-new-form" class="stack-form" novalidate>
<h3>Create a service token</h3>
<p id="token-new-error" class="notice notice-error" role="alert" hidden></p>
<div class="field-row">
<div class="field"><label for="token-new-name">Name (one word)</label><input id="token-new-name" type="text" maxlength="100" autocomplete="off" placeholder="ci-deploy"></div>
<div class="field"><label for="token-new-days">Expires in days (1-90)</label><input id="token-new-days" type="number" min="1" max="90" value="30" inputmode="numeric"></div>
<div class="field"><label for="token-new-ip">Allowed addresses (optional)</label><input id="token-new-ip" type="text" autocomplete="off" placeholder="10.0.0.0/8, 192.0.2.7"></div>
</div>
<fieldset class="scopes"><legend>Scopes</legend>${scopeBoxes}</fieldset>
<button type="submit" class="button button-primary" id="token-new-submit">Create token</button>
</form>
</div>
</section>`
      : '';
    return `<div id="keys-section">
${keysCard}
${tokensCard}
</div>`;
  },
};
