import { escapeHtml } from '../lib/html.js';
import type { ConsoleView } from './view.js';

/**
 * The console's server-rendered documents (API.md 2: /login and /console, same origin).
 *
 * Invariants:
 * - Every value that came from a person or the store passes through escapeHtml, here and only
 *   here; the page script renders API data with DOM text nodes, never as markup.
 * - No inline script or style: the Content-Security-Policy below allows only same-origin files
 *   (/console/app.js, /console/app.css), so an injected tag would not run even if one slipped by.
 * - Forms post nowhere useful without the script: the API's CSRF check needs the x-svc-csrf
 *   header, which only the page script sends.
 */

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export const SCRIPT_PATH = '/console/app.js';
export const STYLE_PATH = '/console/app.css';

// A small shield, as a data: image (img-src allows data:), so the browser asks for no /favicon.ico.
const ICON =
  'data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22 viewBox=%220 0 16 16%22%3E' +
  '%3Cpath d=%22M8 1l6 2.5v4C14 11 11.5 14 8 15 4.5 14 2 11 2 7.5v-4z%22 fill=%22%232f5d8a%22/%3E%3C/svg%3E';

function htmlDocument(title: string, bodyAttributes: Record<string, string>, content: string): string {
  const attributes = Object.entries(bodyAttributes)
    .map(([name, value]) => ` ${name}="${escapeHtml(value)}"`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="${ICON}">
<link rel="stylesheet" href="${STYLE_PATH}">
<script src="${SCRIPT_PATH}" defer></script>
</head>
<body${attributes}>
${content}
</body>
</html>
`;
}

const NOSCRIPT =
  '<noscript><p class="notice notice-error">The console needs JavaScript: its requests carry a header that only the page script can send.</p></noscript>';

export function loginPage(next?: string): string {
  return htmlDocument(
    'Sign in · svc',
    { 'data-page': 'login', class: 'page-login', ...(next ? { 'data-next': next } : {}) },
    `<main class="signin">
<h1 class="brand"><span class="brand-mark" aria-hidden="true"></span>svc console</h1>
${NOSCRIPT}
<form id="signin" class="card" method="post" action="/api/session" novalidate>
<h2>Sign in</h2>
<p id="signin-error" class="notice" role="alert" hidden></p>
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div id="totp-row" hidden>
<label for="totp">Two-factor code</label>
<input id="totp" name="totp" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6,8}" maxlength="8">
<p class="hint">The 6-digit code from your authenticator app.</p>
</div>
<button type="submit" class="button button-primary">Sign in</button>
</form>
<form id="new-password" class="card" method="post" action="/api/me/password" novalidate hidden>
<h2>Choose your own password</h2>
<p class="hint">You signed in with a one-time password. Replace it before you work in the console.</p>
<p id="new-password-error" class="notice" role="alert" hidden></p>
<input id="new-password-username" type="text" autocomplete="username" hidden>
<label for="next-password">New password</label>
<input id="next-password" type="password" autocomplete="new-password" minlength="12" required>
<label for="confirm-password">New password, again</label>
<input id="confirm-password" type="password" autocomplete="new-password" minlength="12" required>
<p class="hint">At least 12 characters.</p>
<button type="submit" class="button button-primary">Save and continue</button>
</form>
</main>`,
  );
}

function workspacePicker(view: ConsoleView): string {
  const current = view.current;
  if (!current) return '';
  if (view.workspaces.length === 1) {
    return `<span class="workspace" id="workspace-name">${escapeHtml(current.name)}</span>`;
  }
  const options = view.workspaces
    .map(
      (w) =>
        `<option value="${escapeHtml(w.id)}"${w.id === current.id ? ' selected' : ''}>${escapeHtml(w.name)}</option>`,
    )
    .join('');
  return `<form id="workspace-form" class="workspace-form" method="get" action="/console">
<label for="workspace-select" class="visually-hidden">Workspace</label>
<select id="workspace-select" name="w">${options}</select>
<button type="submit" class="button button-quiet" id="workspace-go">Open</button>
</form>`;
}

function header(view: ConsoleView): string {
  const role = view.current
    ? `<span class="badge badge-neutral" id="role">${escapeHtml(view.current.role)}</span>`
    : '';
  return `<header class="topbar">
<div class="topbar-left"><span class="brand"><span class="brand-mark" aria-hidden="true"></span>svc</span>${workspacePicker(view)}${role}</div>
<div class="topbar-right"><span class="person" title="${escapeHtml(view.user.email)}">${escapeHtml(view.user.name)} <span class="muted">${escapeHtml(view.user.email)}</span></span>
<button type="button" class="button button-quiet" id="sign-out">Sign out</button></div>
</header>`;
}

function changePasswordPanel(email: string): string {
  return `<section class="card narrow" aria-labelledby="change-title">
<h2 id="change-title">Choose your own password</h2>
<p class="hint">You are signed in with a one-time password. Nothing in a workspace can be done until you replace it.</p>
<form id="change-password" novalidate>
<p id="change-error" class="notice" role="alert" hidden></p>
<input type="text" autocomplete="username" value="${escapeHtml(email)}" hidden>
<label for="current-password">One-time password</label>
<input id="current-password" type="password" autocomplete="current-password" required>
<label for="next-password">New password</label>
<input id="next-password" type="password" autocomplete="new-password" minlength="12" required>
<label for="confirm-password">New password, again</label>
<input id="confirm-password" type="password" autocomplete="new-password" minlength="12" required>
<button type="submit" class="button button-primary">Save</button>
</form>
</section>`;
}

function workspacePanels(view: ConsoleView): string {
  const approvals = view.can.readApprovals
    ? `<section class="card" id="approvals" aria-labelledby="approvals-title">
<div class="section-head"><h2 id="approvals-title">Waiting for approval <span class="count" id="approvals-count"></span></h2></div>
<div class="section-body" id="approvals-body"><p class="muted">Loading…</p></div>
</section>`
    : '';
  return `<section class="card" id="stop-all" aria-labelledby="stop-all-title">
<div class="section-head"><h2 id="stop-all-title">Stop every agent</h2></div>
<div class="section-body" id="stop-all-body"><p class="muted">Loading…</p></div>
</section>
${approvals}
<section class="card" id="agents" aria-labelledby="agents-title">
<div class="section-head"><h2 id="agents-title">Agents <span class="count" id="agents-count"></span></h2></div>
<div class="section-body" id="agents-body"><p class="muted">Loading…</p></div>
</section>`;
}

function mainContent(view: ConsoleView): string {
  if (view.user.mustChangePassword) return changePasswordPanel(view.user.email);
  if (!view.current)
    return '<section class="card narrow"><h2>No workspace</h2><p>You are not a member of any workspace. Ask an owner or an admin to add you.</p></section>';
  return workspacePanels(view);
}

export function consolePage(view: ConsoleView): string {
  const attributes: Record<string, string> = {
    'data-page': 'console',
    class: 'page-console',
    'data-user': view.user.id,
  };
  if (view.current && !view.user.mustChangePassword) {
    attributes['data-workspace'] = view.current.id;
    attributes['data-can-decide'] = String(view.can.decideApprovals);
    attributes['data-can-stop-all'] = String(view.can.stopAll);
    attributes['data-can-read-members'] = String(view.can.readMembers);
  }
  const title = view.current ? `${view.current.name} · svc console` : 'svc console';
  return htmlDocument(
    title,
    attributes,
    `${header(view)}
<main class="console">
${NOSCRIPT}
<div class="toolbar"><p id="status" class="status" role="status" aria-live="polite"></p>
${view.current && !view.user.mustChangePassword ? '<div class="toolbar-right"><span class="muted" id="updated"></span><button type="button" class="button button-quiet" id="refresh">Refresh</button></div>' : ''}</div>
<p id="error" class="notice notice-error" role="alert" hidden></p>
${mainContent(view)}
</main>`,
  );
}
