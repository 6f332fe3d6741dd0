import type { ConsoleView } from './view.js';
import { section as overview } from './sections/overview.js';
import { section as agents } from './sections/agents.js';
import { section as approvals } from './sections/approvals.js';
import { section as keys } from './sections/keys.js';
import { section as members } from './sections/members.js';
import { section as ledger } from './sections/ledger.js';
import { section as usage } from './sections/usage.js';
import { section as budgets } from './sections/budgets.js';
import { section as webhooks } from './sections/webhooks.js';
import { section as integrations } from './sections/integrations.js';
import { section as mcp } from './sections/mcp.js';
import { section as templates } from './sections/templates.js';
import { section as blueprints } from './sections/blueprints.js';
import { section as account } from './sections/account.js';

/**
 * The console's sections (issue 21, item 4): each is its own page, /console/{id} (the overview is
 * /console), sharing one header whose navigation lists the sections the person's role may see.
 *
 * A section's server part renders only a skeleton (headings, empty containers, and data-* flags
 * for what the role may do); its page script (browser/section-{id}.ts, `section_{id}()`, run by browser/main.ts) fills it
 * from the API with text nodes. `visible` uses the one permission table, as the API does: it
 * hides what a role cannot use, and the API still refuses it.
 */
export interface ConsoleSection {
  /** URL segment and the page's body data-section. */
  id: string;
  /** Navigation label and page heading. */
  title: string;
  /** Whether the person's role in the workspace shown may use this section. */
  visible(view: ConsoleView): boolean;
  /**
   * Whether the page carries the names of the workspace's people (view.people), for records that
   * name people by id to a role that may not read the members list (an auditor on the ledger).
   */
  names?: boolean;
  /** The server-rendered skeleton inside <main>; every value passes through escapeHtml. */
  body(view: ConsoleView): string;
}

export const SECTIONS: readonly ConsoleSection[] = [
  overview,
  agents,
  templates,
  blueprints,
  approvals,
  keys,
  members,
  ledger,
  usage,
  budgets,
  webhooks,
  integrations,
  mcp,
  account,
];

/** A section's address, keeping the workspace shown (?w=). */
export function sectionPath(id: string, workspaceId?: string): string {
  const path = id === 'overview' ? '/console' : `/console/${id}`;
  return workspaceId ? `${path}?w=${encodeURIComponent(workspaceId)}` : path;
}

export function findSection(id: string): ConsoleSection | undefined {
  return SECTIONS.find((s) => s.id === id);
}
