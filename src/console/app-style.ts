import { STYLE_AGENTS } from './style-agents.js';
import { STYLE_APPROVALS } from './style-approvals.js';
import { STYLE_KEYS } from './style-keys.js';
import { STYLE_MCP } from './style-mcp.js';
import { STYLE_MEMBERS } from './style-members.js';
import { STYLE_OVERVIEW } from './style-overview.js';
import { STYLE_LEDGER } from './style-ledger.js';
import { STYLE_USAGE } from './style-usage.js';
import { STYLE_BUDGETS } from './style-budgets.js';
import { STYLE_WEBHOOKS } from './style-webhooks.js';
import { STYLE_INTEGRATIONS } from './style-integrations.js';
import { STYLE_SETUP } from './style-setup.js';

/**
 * Each console section's own rules (src/console/style-{id}.ts), appended after the shared ones
 * below, in the order of sections.ts. Shared pieces (cards, tables, inline forms, items) stay here.
 */
const SECTION_STYLES: readonly string[] = [
  STYLE_OVERVIEW,
  STYLE_AGENTS,
  STYLE_APPROVALS,
  STYLE_KEYS,
  STYLE_MEMBERS,
  STYLE_LEDGER,
  STYLE_USAGE,
  STYLE_BUDGETS,
  STYLE_WEBHOOKS,
  STYLE_INTEGRATIONS,
  STYLE_MCP,
  STYLE_SETUP,
];

/**
 * The console's stylesheet, served as /console/app.css (the CSP allows no inline style). Quiet by
 * design: one accent, colour reserved for standing (running, stopped, waiting) and for the
 * destructive buttons; system font; contrast of at least 4.5:1 for text in both colour schemes.
 */
const SHARED_STYLE = `
:root {
  --bg: #f5f6f8; --surface: #ffffff; --text: #1c2228; --muted: #5b6672; --border: #dbe0e6; --subtle: #f0f2f5;
  --accent: #2f5d8a; --accent-hover: #274e74; --on-accent: #ffffff;
  --ok: #1d6b40; --ok-bg: #e3f3ea; --danger: #a8281c; --danger-hover: #8e2117; --danger-bg: #fcebe9;
  --warn: #7a4f00; --warn-bg: #fdf1d6; --focus: #4a8fd4;
  color-scheme: light dark;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #14181c; --surface: #1b2026; --text: #e4e8ec; --muted: #9aa5b1; --border: #2e363f; --subtle: #232a31;
    --accent: #5b8fc4; --accent-hover: #6c9dd0; --on-accent: #0d1216;
    --ok: #7fd1a1; --ok-bg: #173527; --danger: #f0938a; --danger-hover: #f4a9a2; --danger-bg: #3b1d1a;
    --warn: #f0c674; --warn-bg: #3a2f14; --focus: #7fb2e5;
  }
}
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; background: var(--bg); color: var(--text);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  -webkit-font-smoothing: antialiased;
}
h1, h2, h3 { margin: 0; line-height: 1.3; }
h2 { font-size: 1rem; font-weight: 600; }
p { margin: 0 0 .75rem; }
p:last-child { margin-bottom: 0; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: .85em; }
.muted { color: var(--muted); }
.hint { color: var(--muted); font-size: .875rem; margin: .25rem 0 .75rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
[hidden] { display: none !important; }

/* Brand and top bar */
.brand { display: inline-flex; align-items: center; gap: .5rem; font-weight: 650; letter-spacing: .01em; }
.brand-mark { width: 14px; height: 16px; background: var(--accent); clip-path: polygon(50% 0, 100% 18%, 100% 50%, 50% 100%, 0 50%, 0 18%); }
.site-header { background: var(--surface); border-bottom: 1px solid var(--border); }
.topbar {
  display: flex; align-items: center; justify-content: space-between; gap: 1rem; flex-wrap: wrap;
  padding: .7rem 1.5rem;
}
.topbar-left, .topbar-right { display: flex; align-items: center; gap: .9rem; min-width: 0; }
.workspace { font-weight: 600; overflow-wrap: anywhere; }
.workspace::before { content: "/"; color: var(--muted); font-weight: 400; margin-right: .9rem; }
.workspace-form { display: flex; align-items: center; gap: .4rem; }
.workspace-form::before { content: "/"; color: var(--muted); margin-right: .5rem; }
.workspace-form select { width: auto; max-width: 22rem; padding: .3rem .5rem; font-weight: 600; }
.new-workspace { margin-left: .5rem; }
.new-workspace[open] form { position: absolute; z-index: 5; margin-top: .4rem; padding: .75rem; background: var(--surface, #fff); border: 1px solid var(--border, #ddd); border-radius: .4rem; max-width: 26rem; }
.person { font-size: .9rem; overflow-wrap: anywhere; }

/* Sections navigation: wraps on a narrow screen, never clipped */
.sections-nav { padding: 0 1.5rem; }
.sections-nav ul { display: flex; flex-wrap: wrap; gap: .1rem .25rem; margin: 0; padding: 0 0 .35rem; list-style: none; }
.sections-nav a {
  display: inline-block; padding: .35rem .65rem; border-radius: 6px; font-size: .875rem; font-weight: 550;
  color: var(--muted); text-decoration: none;
}
.sections-nav a:hover { color: var(--text); background: var(--subtle); }
.sections-nav a[aria-current="page"] { color: var(--accent); background: var(--subtle); box-shadow: inset 0 -2px 0 var(--accent); }

/* Page frame */
main.console { max-width: 72rem; margin: 0 auto; padding: 1rem 1.5rem 3rem; }
.toolbar { display: flex; align-items: center; justify-content: space-between; gap: 1rem; min-height: 2.25rem; margin-bottom: .75rem; }
.toolbar-right { display: flex; align-items: center; gap: .75rem; font-size: .875rem; }
.status { margin: 0; color: var(--ok); font-size: .9rem; }
.status-warn { color: var(--warn); }
.card { background: var(--surface); border: 1px solid var(--border); border-radius: 10px; margin-bottom: 1.25rem; }
.card.narrow { max-width: 30rem; padding: 1.25rem 1.5rem; }
.card.narrow h2 { margin-bottom: .5rem; }
.section-head { display: flex; align-items: center; justify-content: space-between; gap: 1rem; padding: .85rem 1.25rem; border-bottom: 1px solid var(--border); }
.section-body { padding: 1rem 1.25rem; }
.count { color: var(--muted); font-weight: 400; margin-left: .25rem; }
.empty { color: var(--muted); margin: 0; }

/* Notices */
.notice { padding: .6rem .85rem; border-radius: 6px; background: var(--warn-bg); color: var(--warn); font-size: .9rem; }
.notice-error { background: var(--danger-bg); color: var(--danger); }
main.console > .notice { margin-bottom: 1rem; }
.item-error { margin-top: .6rem; }

/* Badges */
.badge {
  display: inline-block; padding: .1rem .55rem; border-radius: 999px; font-size: .75rem; font-weight: 600;
  letter-spacing: .02em; line-height: 1.5; white-space: nowrap; vertical-align: middle;
  background: var(--subtle); color: var(--muted);
}
.badge-ok { background: var(--ok-bg); color: var(--ok); }
.badge-danger { background: var(--danger-bg); color: var(--danger); }
.badge-warn { background: var(--warn-bg); color: var(--warn); }
.tag { display: inline-block; margin: .15rem .3rem 0 0; padding: 0 .4rem; border: 1px solid var(--border); border-radius: 4px; font-size: .75rem; color: var(--muted); }

/* Forms */
label { display: block; font-size: .875rem; font-weight: 550; margin: .75rem 0 .3rem; }
input, select, textarea {
  width: 100%; font: inherit; color: var(--text); background: var(--surface);
  padding: .45rem .6rem; border: 1px solid var(--border); border-radius: 6px;
}
input:hover, select:hover { border-color: var(--muted); }
input::placeholder { color: var(--muted); opacity: .8; }
:focus-visible { outline: 2px solid var(--focus); outline-offset: 2px; }
input:focus-visible, select:focus-visible { outline-offset: 0; border-color: var(--focus); }

/* Buttons */
.button {
  display: inline-flex; align-items: center; justify-content: center; gap: .35rem;
  font: inherit; font-size: .875rem; font-weight: 550; line-height: 1.3; white-space: nowrap;
  padding: .45rem .9rem; border-radius: 6px; border: 1px solid var(--border);
  background: var(--surface); color: var(--text); cursor: pointer;
}
.button:hover { background: var(--subtle); }
.button:disabled { opacity: .55; cursor: default; }
.button-primary { background: var(--accent); border-color: var(--accent); color: var(--on-accent); }
.button-primary:hover { background: var(--accent-hover); }
.button-approve { border-color: var(--ok); color: var(--ok); }
.button-approve:hover { background: var(--ok-bg); }
.button-danger { background: var(--danger); border-color: var(--danger); color: #ffffff; }
.button-danger:hover { background: var(--danger-hover); }
.button-outline-danger { color: var(--danger); }
.button-outline-danger:hover { background: var(--danger-bg); }
.button-quiet { border-color: transparent; background: transparent; color: var(--muted); }
.button-quiet:hover { color: var(--text); background: var(--subtle); }

/* Sign-in */
.signin { max-width: 24rem; margin: 12vh auto 3rem; padding: 0 1rem; }
.signin > .brand { font-size: 1.15rem; margin-bottom: 1rem; }
.signin .card { padding: 1.5rem; }
.signin h2 { font-size: 1.1rem; margin-bottom: .5rem; }
.signin .button-primary { width: 100%; margin-top: 1.25rem; padding: .6rem; }
.signin .notice { margin: .5rem 0; }

/* Inline forms (a reason, a note, beside their buttons) */
.inline-form { display: flex; align-items: center; gap: .5rem; flex-wrap: wrap; }
.inline-form input { flex: 1 1 14rem; width: auto; min-width: 10rem; }

/* Approvals */
.items { list-style: none; margin: 0; padding: 0; }
.item { display: grid; grid-template-columns: minmax(0, 1fr) minmax(18rem, 26rem); gap: 1rem 1.5rem; padding: 1rem 0; border-top: 1px solid var(--border); }
.item:first-child { border-top: 0; padding-top: 0; }
.item:last-child { padding-bottom: 0; }
.item-title { font-weight: 600; overflow-wrap: anywhere; }
.item-amount { font-size: 1.15rem; font-weight: 650; font-variant-numeric: tabular-nums; margin: .15rem 0; }
.item-meta { color: var(--muted); font-size: .85rem; display: flex; flex-wrap: wrap; gap: .15rem .9rem; }
.item-decide { display: flex; flex-direction: column; gap: .5rem; }
.item-decide .buttons { display: flex; gap: .5rem; justify-content: flex-end; }
.item-history { margin: .4rem 0 0; padding: 0; list-style: none; font-size: .85rem; color: var(--muted); }

/* Agents */
.table-wrap { overflow-x: auto; }
table { width: 100%; border-collapse: collapse; font-size: .9rem; }
th { text-align: left; font-size: .75rem; font-weight: 600; letter-spacing: .04em; text-transform: uppercase; color: var(--muted); padding: 0 .75rem .5rem 0; }
td { padding: .75rem .75rem .75rem 0; border-top: 1px solid var(--border); vertical-align: top; }
td.actions { text-align: right; padding-right: 0; white-space: nowrap; }
td.actions .inline-form { justify-content: flex-end; flex-wrap: nowrap; }
td.actions .inline-form input { min-width: 12rem; }
.agent-name { font-weight: 600; overflow-wrap: anywhere; }
.holds { margin: 0; padding: 0; list-style: none; color: var(--muted); font-size: .85rem; }
.holds li + li { margin-top: .2rem; }

/* Forms of several fields (a new agent, key, token, person) */
.field-row { display: flex; flex-wrap: wrap; gap: 0 1rem; }
.field-row .field { flex: 1 1 14rem; min-width: 0; }
.stack-form > .button { margin-top: .75rem; }
label.check { display: inline-flex; align-items: center; gap: .4rem; margin: 0; font-weight: 400; }
label.check input { width: auto; }
.badge-neutral { background: var(--subtle); color: var(--text); }

/* A secret shown once */
.secret { margin-bottom: 1rem; padding: .75rem 1rem; border: 1px solid var(--warn); border-radius: 8px; background: var(--warn-bg); }
.secret-title { color: var(--warn); font-size: .9rem; }
.secret-row { display: flex; gap: .5rem; flex-wrap: wrap; }
.secret-row input { flex: 1 1 16rem; min-width: 0; width: auto; }
.secret-copied { font-size: .85rem; }
.confirm { display: inline-flex; gap: .5rem; flex-wrap: wrap; }

/*
 * Tables that become one block per row on a narrow screen (a phone): every cell on its own line
 * with its column's name, buttons wrapping inside the screen, never clipped beside it.
 */
@media (max-width: 760px) {
  table.table-stack, table.table-stack tbody, table.table-stack tr, table.table-stack td { display: block; width: 100%; }
  table.table-stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.table-stack tr { padding: .75rem 0; border-top: 1px solid var(--border); }
  table.table-stack tr:first-child { border-top: 0; padding-top: 0; }
  table.table-stack td { border-top: 0; padding: .2rem 0; text-align: left; white-space: normal; }
  table.table-stack td[data-label]:not(:first-child):not(.actions)::before {
    content: attr(data-label); display: block; font-size: .7rem; font-weight: 600; letter-spacing: .04em;
    text-transform: uppercase; color: var(--muted);
  }
  table.table-stack td.actions { padding-top: .5rem; }
  table.table-stack td.actions .inline-form { justify-content: flex-start; flex-wrap: wrap; }
  table.table-stack td.actions .inline-form input { min-width: 0; flex: 1 1 100%; }
}

@media (max-width: 760px) {
  .topbar, .sections-nav, main.console { padding-left: 1rem; padding-right: 1rem; }
  .item { grid-template-columns: 1fr; }
  .item-decide .buttons { justify-content: flex-start; }
  td.actions .inline-form { flex-wrap: wrap; }
}
`;

export const APP_STYLE = SHARED_STYLE + SECTION_STYLES.join('');
