import { consolePage } from './console-page.js';
import { body } from './helpers.js';
import { section_agents } from './section-agents.js';
import { section_approvals } from './section-approvals.js';
import { section_budgets } from './section-budgets.js';
import { section_integrations } from './section-integrations.js';
import { section_keys } from './section-keys.js';
import { section_ledger } from './section-ledger.js';
import { section_mcp } from './section-mcp.js';
import { section_members } from './section-members.js';
import { section_overview } from './section-overview.js';
import { section_usage } from './section-usage.js';
import { section_webhooks } from './section-webhooks.js';
import { loginPage } from './sign-in.js';
import { section_account } from './section-account.js';
import { section_blueprints } from './section-blueprints.js';
import { section_templates } from './section-templates.js';
import { section_mcp_add } from './section-mcp-add.js';
import { section_integrations_setup } from './section-integrations-setup.js';
/**
 * The console's page script, served as /console/app.js: TypeScript bundled by esbuild at build
 * time (scripts/generate-console.mjs) into one file, no framework, nothing from another origin;
 * one file for every page (body data-page, and on the console body data-section). The bundle
 * is one function, so nothing leaks into the page's globals.
 *
 * Rules it keeps:
 * - API data is rendered with DOM APIs and text nodes only; no markup is built from data.
 * - Every write sends x-svc-csrf: 1 and a JSON body; cookies go same-origin only.
 * - Every error answer shows its error.message to the person, beside what they tried.
 * - A 401 on the console means the session ended: the person is sent to /login.
 * - What a person typed (notes, reasons) survives a refresh of the lists.
 */

/** Each console section's page script, by the section id of src/console/sections.ts. */
const SECTION_RUNNERS: Record<string, () => void> = {
  overview: section_overview,
  agents: section_agents,
  approvals: section_approvals,
  keys: section_keys,
  members: section_members,
  ledger: section_ledger,
  usage: section_usage,
  budgets: section_budgets,
  webhooks: section_webhooks,
  integrations: function () {
    section_integrations();
    section_integrations_setup();
  },
  mcp: function () {
    section_mcp();
    section_mcp_add();
  },
  templates: section_templates,
  blueprints: section_blueprints,
  account: section_account,
};

if (body.dataset.page === 'login') loginPage();
else if (body.dataset.page === 'console') consolePage(SECTION_RUNNERS);
