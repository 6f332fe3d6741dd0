import { BOARD } from './board.js';
import { CONSOLE_PAGE } from './console-page.js';
import { HELPERS } from './helpers.js';
import { SECTION_AGENTS } from './section-agents.js';
import { SECTION_APPROVALS } from './section-approvals.js';
import { SECTION_KEYS } from './section-keys.js';
import { SECTION_MCP } from './section-mcp.js';
import { SECTION_MEMBERS } from './section-members.js';
import { SECTION_OVERVIEW } from './section-overview.js';
import { SECTIONS_SHARED } from './sections-shared.js';
import { SECTION_LEDGER } from './section-ledger.js';
import { SECTION_USAGE } from './section-usage.js';
import { SECTION_BUDGETS } from './section-budgets.js';
import { SECTION_WEBHOOKS } from './section-webhooks.js';
import { SECTION_INTEGRATIONS } from './section-integrations.js';
import { SIGN_IN } from './sign-in.js';

/**
 * Each console section's page script (script/section-{id}.ts defines `section_{id}()`), by the
 * section id of sections.ts. consolePage() runs the one named by body data-section.
 */
const SECTION_SCRIPTS: Record<string, string> = {
  overview: SECTION_OVERVIEW,
  agents: SECTION_AGENTS,
  approvals: SECTION_APPROVALS,
  keys: SECTION_KEYS,
  members: SECTION_MEMBERS,
  ledger: SECTION_LEDGER,
  usage: SECTION_USAGE,
  budgets: SECTION_BUDGETS,
  webhooks: SECTION_WEBHOOKS,
  integrations: SECTION_INTEGRATIONS,
  mcp: SECTION_MCP,
};

const runners = Object.keys(SECTION_SCRIPTS)
  .map((id) => `'${id}': section_${id.replace(/-/g, '_')}`)
  .join(', ');

/**
 * The console's page script, served as /console/app.js: plain browser JavaScript, no build step,
 * no framework, nothing from another origin; one file for every page (body data-page, and on
 * the console body data-section), its parts joined inside one function so that nothing leaks
 * into the page's globals.
 *
 * Rules it keeps:
 * - API data is rendered with DOM APIs and text nodes only; no markup is built from data.
 * - Every write sends x-svc-csrf: 1 and a JSON body (the CSRF rule); cookies go same-origin only.
 * - Every error answer shows its error.message to the person, beside what they tried.
 * - A 401 on the console means the session ended: the person is sent to /login.
 * - What a person typed (notes, reasons) survives a refresh of the lists.
 */
export const APP_SCRIPT = [
  "'use strict';",
  '(function () {',
  '  var body = document.body;',
  HELPERS,
  SIGN_IN,
  CONSOLE_PAGE,
  SECTIONS_SHARED,
  BOARD,
  ...Object.values(SECTION_SCRIPTS),
  `  var sectionRunners = { ${runners} };`,
  "  if (body.dataset.page === 'login') loginPage();",
  "  else if (body.dataset.page === 'console') consolePage();",
  '})();',
  '',
].join('\n');
