import type { ConsoleSection } from '../sections.js';
import { viewAllows } from '../view.js';

/**
 * Members, /console/members (owners and admins): the workspace's people with their roles,
 * whether they have two-factor on, and any lockout in force; add a person, change a role, remove
 * one; owners lift a lockout (never their own). Only owners make or change owners, as the API
 * rules. Filled by browser/section-members.ts.
 */
export const section: ConsoleSection = {
  id: 'members',
  title: 'Members',
  visible: (view) => viewAllows(view, 'members.manage'),
  body(view) {
    const owner = view.current?.role === 'owner';
    const roles = ['admin', 'member', 'analyst', 'auditor', ...(owner ? ['owner'] : [])]
      .map((r) => `<option value="${r}"${r === 'member' ? ' selected' : ''}>${r}</option>`)
      .join('');
    return `<div id="members-section" data-permission="members.manage" data-is-owner="${String(owner)}" data-can-unlock="${String(viewAllows(view, 'members.unlock'))}">
<section class="card" id="members" aria-labelledby="members-title">
<div class="section-head"><h2 id="members-title">Members <span class="count" id="members-count"></span></h2></div>
<div class="section-body" id="members-body"><p class="muted">Loading…</p></div>
</section>
<section class="card" id="member-new" aria-labelledby="member-new-title">
<div class="section-head"><h2 id="member-new-title">Add a person</h2></div>
<div class="section-body">
<form id="member-new-form" class="stack-form" novalidate>
<p id="member-new-error" class="notice notice-error" role="alert" hidden></p>
<div class="field-row">
<div class="field"><label for="member-new-email">Email</label><input id="member-new-email" type="email" maxlength="320" autocomplete="off" required></div>
<div class="field"><label for="member-new-name">Name</label><input id="member-new-name" type="text" maxlength="200" autocomplete="off" required></div>
<div class="field"><label for="member-new-role">Role</label><select id="member-new-role">${roles}</select></div>
<div class="field"><label for="member-new-password">One-time password (optional)</label><input id="member-new-password" type="text" minlength="12" maxlength="1024" autocomplete="off" spellcheck="false"></div>
</div>
<p class="hint">A person new to this server signs in with the one-time password and must replace it. Someone who already has an account keeps their own password.</p>
<button type="submit" class="button button-primary" id="member-new-submit">Add person</button>
</form>
</div>
</section>
</div>`;
  },
};
