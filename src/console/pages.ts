import { escapeHtml } from '../lib/html.js';
import { SECTIONS, sectionPath, type ConsoleSection } from './sections.js';
import type { ConsoleView } from './view.js';

/**
 * The console's server-rendered documents (/login and /console, same origin; docs/console.md).
 *
 * Invariants:
 * - Every value that came from a person or the store passes through escapeHtml, here and only
 *   here; the page script renders API data with DOM text nodes, never as markup.
 * - No inline script or style: the Content-Security-Policy below allows only same-origin files
 *   (/console/app.js, /console/app.css), so an injected tag would not run even if one slipped by.
 * - Every control a page shows names the permission it needs, on itself or on an element around
 *   it (data-permission: a name of the one permission table, src/people/permissions.ts, or
 *   `session`, what any signed-in person may do), and is shown only to a role that holds it; an
 *   agent's controls also name whom the agent acts for (data-acts-for): the person it acts for,
 *   an owner or an admin may use them (test/browser/console-roles.test.ts).
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

// A small shield, as a data: image (img-src allows data:), so the browser asks for no /favicon.ico;
// the OAuth consent page shows it too.
export const ICON =
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

function workspacePicker(view: ConsoleView, section: ConsoleSection): string {
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
  return `<form id="workspace-form" class="workspace-form" method="get" action="${escapeHtml(sectionPath(section.id))}">
<label for="workspace-select" class="visually-hidden">Workspace</label>
<select id="workspace-select" name="w">${options}</select>
<button type="submit" class="button button-quiet" id="workspace-go">Open</button>
</form>`;
}

/**
 * An owner makes another workspace (they own it; POST /api/workspaces): a name, then the console
 * opens it. Others never see it.
 */
function newWorkspace(view: ConsoleView): string {
  if (view.current?.role !== 'owner' || view.user.mustChangePassword) return '';
  return `<details class="new-workspace" id="new-workspace" data-permission="workspaces.create">
<summary class="button button-quiet">New workspace</summary>
<form id="new-workspace-form" class="inline-form">
<label for="new-workspace-name">Name of the new workspace</label>
<input id="new-workspace-name" name="name" maxlength="200" required autocomplete="off">
<button type="submit" class="button button-primary">Create</button>
<p id="new-workspace-error" class="notice" role="alert" hidden></p>
</form>
</details>`;
}

/** The sections the person's role may see, the current one marked; every link keeps ?w=. */
function navigation(view: ConsoleView, section: ConsoleSection): string {
  if (!view.current || view.user.mustChangePassword) return '';
  const wid = view.current.id;
  const links = SECTIONS.filter((s) => s.visible(view))
    .map(
      (s) =>
        `<li><a href="${escapeHtml(sectionPath(s.id, wid))}" data-nav="${escapeHtml(s.id)}"${s.id === section.id ? ' aria-current="page"' : ''}>${escapeHtml(s.title)}</a></li>`,
    )
    .join('');
  return `<nav class="sections-nav" aria-label="Console sections"><ul>${links}</ul></nav>`;
}

function header(view: ConsoleView, section: ConsoleSection): string {
  const role = view.current
    ? `<span class="badge badge-neutral" id="role">${escapeHtml(view.current.role)}</span>`
    : '';
  return `<header class="site-header" data-permission="session">
<div class="topbar">
<div class="topbar-left"><span class="brand"><span class="brand-mark" aria-hidden="true"></span>svc</span>${workspacePicker(view, section)}${role}${newWorkspace(view)}</div>
<div class="topbar-right"><span class="person" title="${escapeHtml(view.user.email)}">${escapeHtml(view.user.name)} <span class="muted">${escapeHtml(view.user.email)}</span></span>
<button type="button" class="button button-quiet" id="sign-out">Sign out</button></div>
</div>
${navigation(view, section)}
</header>`;
}

function changePasswordPanel(email: string): string {
  return `<section class="card narrow" aria-labelledby="change-title" data-permission="session">
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

function mainContent(view: ConsoleView, section: ConsoleSection): string {
  if (view.user.mustChangePassword) return changePasswordPanel(view.user.email);
  if (!view.current)
    return '<section class="card narrow"><h2>No workspace</h2><p>You are not a member of any workspace. Ask an owner or an admin to add you.</p></section>';
  if (!section.visible(view))
    return `<section class="card narrow" id="not-for-role"><h2>${escapeHtml(section.title)}</h2><p>Your role in this workspace (${escapeHtml(view.current.role)}) does not open this section. Ask an owner or an admin if you need it.</p></section>`;
  return section.body(view);
}

/** Whether the page shows the section itself (and so loads a workspace's data). */
export function sectionShown(view: ConsoleView, section: ConsoleSection): boolean {
  return view.current !== undefined && !view.user.mustChangePassword && section.visible(view);
}

export function consolePage(view: ConsoleView, section: ConsoleSection): string {
  const attributes: Record<string, string> = {
    'data-page': 'console',
    class: 'page-console',
    'data-user': view.user.id,
  };
  const shown = sectionShown(view, section);
  if (view.current && shown) {
    attributes['data-workspace'] = view.current.id;
    attributes['data-can-decide'] = String(view.can.decideApprovals);
    attributes['data-can-stop-all'] = String(view.can.stopAll);
    attributes['data-can-read-members'] = String(view.can.readMembers);
    attributes['data-can-manage-agents'] = String(view.can.manageAgents);
    attributes['data-can-manage-all-agents'] = String(view.can.manageAllAgents);
  }
  // The page script runs a section's code only when the section is shown.
  if (shown) attributes['data-section'] = section.id;
  const place = section.id === 'overview' ? '' : `${section.title} · `;
  const title = view.current ? `${place}${view.current.name} · svc console` : 'svc console';
  return htmlDocument(
    title,
    attributes,
    `${header(view, section)}
<main class="console">
${NOSCRIPT}
<div class="toolbar"><p id="status" class="status" role="status" aria-live="polite"></p>
${shown ? '<div class="toolbar-right" data-permission="session"><span class="muted" id="updated"></span><button type="button" class="button button-quiet" id="refresh">Refresh</button></div>' : ''}</div>
<p id="error" class="notice notice-error" role="alert" hidden></p>
${mainContent(view, section)}
</main>`,
  );
}
