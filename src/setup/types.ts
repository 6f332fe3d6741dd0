import { AppError } from '../errors/app-error.js';
import type { Clock } from '../lib/clock.js';
import type { Ledger } from '../ledger/service.js';
import type { Store } from '../store/index.js';
import type { AgentsService } from '../agents/index.js';
import type { BlueprintsService } from '../blueprints/index.js';
import type { MandatesService } from '../mandates/index.js';
import type { PeopleService } from '../people/index.js';
import type { Budgets } from '../gateway/budgets.js';
import { GENERATED_KINDS, GIVEN_KINDS } from '../integrations/kinds.js';
import type { IntegrationRegistry } from '../integrations/registry.js';
import type { McpProxy } from '../mcp/proxy.js';
import type { Section } from './document.js';

/** What svc apply and svc export are built from: the services of the domains they set up. */
export interface SetupDeps {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  people: PeopleService;
  agents: AgentsService;
  mandates: MandatesService;
  blueprints: BlueprintsService;
  budgets: Pick<Budgets, 'create' | 'list'>;
  mcp: Pick<McpProxy, 'listAll' | 'add' | 'update' | 'remove' | 'secretIs'>;
  registry: IntegrationRegistry;
}

export type ChangeAction = 'create' | 'update' | 'unchanged' | 'remove' | 'unmanaged';

export interface Change {
  section: Section;
  name: string;
  action: ChangeAction;
  /** For an update: the fields that differ. */
  fields: string[];
}

export interface SetupResult {
  dryRun: boolean;
  prune: boolean;
  changed: boolean;
  summary: Record<ChangeAction, number>;
  changes: Change[];
  /** Secrets made by the server for integrations created now (issuer, github, chat-relay): shown this once. */
  secrets: Array<{ integration: string; secret: string }>;
}

export interface ApplyInput {
  document: unknown;
  /** Values of the environment variables the document names, read by the caller. */
  secrets?: Record<string, string>;
  dryRun?: boolean;
  prune?: boolean;
}

export type Step = Change & {
  run?: () => Promise<void>;
  remember?: { createdByFile?: boolean; secretFromEnv?: string | null };
};

export const REMOVABLE: readonly Section[] = ['agents', 'mcpServers'];
/** The kinds whose secret the server makes (answered once in `secrets`). */
export const GENERATED: ReadonlySet<string> = new Set(GENERATED_KINDS);
/** The kinds that take the provider's own signing secret (a `signingSecret` reference in the file). */
export const GIVEN: ReadonlySet<string> = new Set(GIVEN_KINDS);

/** A field error of the file found against the workspace (a name it refers to that does not exist). */
export const fileFault = (field: string, message: string) =>
  new AppError('invalid_workspace_file', { details: { errors: [{ field, message }] } });
