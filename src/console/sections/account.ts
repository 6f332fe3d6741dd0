import type { ConsoleSection } from '../sections.js';

/**
 * Your account, /console/account (every member, in whatever workspace is shown: it concerns the
 * person, not the workspace): change one's password (PUT /api/me/password), two-factor sign-in
 * turned on with a QR code and confirmed with a code (POST /api/me/totp, /api/me/totp/confirm),
 * its ten recovery codes shown once and replaced together (POST /api/me/totp/recovery-codes),
 * two-factor turned off (DELETE /api/me/totp), and one's own sessions, each ended alone or every
 * other at once (GET/DELETE /api/me/sessions). Filled by browser/section-account.ts.
 */
export const section: ConsoleSection = {
  id: 'account',
  title: 'Your account',
  visible: (view) => view.current !== undefined,
  body: (view) => `<div id="account-section" data-permission="session" data-totp="${String(view.user.totp)}">
<section class="card" id="account-password" aria-labelledby="account-password-title">
<div class="section-head"><h2 id="account-password-title">Password</h2></div>
<div class="section-body">
<form id="account-password-form" class="stack-form" novalidate>
<p id="account-password-error" class="notice notice-error" role="alert" hidden></p>
<input type="text" autocomplete="username" hidden>
<div class="field-row">
<div class="field"><label for="account-current-password">Current password</label><input id="account-current-password" type="password" autocomplete="current-password" required></div>
<div class="field"><label for="account-new-password">New password</label><input id="account-new-password" type="password" autocomplete="new-password" minlength="12" required></div>
<div class="field"><label for="account-confirm-password">New password, again</label><input id="account-confirm-password" type="password" autocomplete="new-password" minlength="12" required></div>
</div>
<p class="hint">At least 12 characters. Changing it signs you out everywhere else.</p>
<button type="submit" class="button button-primary" id="account-password-save">Change password</button>
</form>
</div>
</section>
<section class="card" id="account-totp" aria-labelledby="account-totp-title">
<div class="section-head"><h2 id="account-totp-title">Two-factor sign-in</h2></div>
<div class="section-body" id="account-totp-body"><p class="muted">Loading…</p></div>
</section>
<section class="card" id="account-sessions" aria-labelledby="account-sessions-title">
<div class="section-head"><h2 id="account-sessions-title">Your sessions <span class="count" id="account-sessions-count"></span></h2></div>
<div class="section-body" id="account-sessions-body"><p class="muted">Loading…</p></div>
</section>
</div>`,
};
