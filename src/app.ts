import { createAgentsService } from './agents/index.js';
import { createBlueprintsService } from './blueprints/index.js';
import { createApprovals } from './approvals/service.js';
import { createGate } from './gate/service.js';
import { createKeysService } from './keys/index.js';
import { createKillSwitch } from './killswitch/service.js';
import { createDrills } from './drills/service.js';
import { createScorecard } from './scorecard/service.js';
import { createCallLog } from './gateway/calls.js';
import { createBudgets } from './gateway/budgets.js';
import { createGateway } from './gateway/service.js';
import { createOAuth } from './oauth/service.js';
import { createMcpProxy, PRIVATE_SETTING } from './mcp/proxy.js';
import { createCards } from './integrations/cards.js';
import { createHookEvents } from './integrations/hook-events.js';
import { createIntegrations } from './integrations/service.js';
import { createStripeEvents } from './integrations/stripe/service.js';
import { createPlans } from './plans/service.js';
import { createIntegrationRegistry } from './integrations/registry.js';
import { createOnce } from './integrations/once.js';
import { createGithub } from './integrations/github/service.js';
import { createGithubCallbacks } from './integrations/github/callbacks.js';
import { createSsf } from './integrations/ssf/service.js';
import { createSsfKeys } from './integrations/ssf/keys.js';
import { createWebhooks } from './webhooks/service.js';
import { createChat } from './chat/service.js';
import { createLedger } from './ledger/service.js';
import { createMandatesService } from './mandates/index.js';
import { createReceipts } from './receipts/service.js';
import { createSigningKeys } from './receipts/signing-keys.js';
import { createSweeper, retentionJobs } from './retention/index.js';
import { instrumentStore } from './observability/store.js';
import { systemClock, type Clock } from './lib/clock.js';
import { randomIds, type IdSource } from './lib/ids.js';
import { createLogger, type Logger } from './lib/log.js';
import { safeDispatcher, type LookupFn } from './lib/safe-target.js';
import { createPeopleService } from './people/index.js';
import { createServiceTokensService } from './service-tokens/index.js';
import type { Settings } from './settings/load.js';
import { deriveKey } from './lib/seal.js';
import { resolve } from 'node:path';
import {
  createMasterKey,
  CURRENT_SCHEMA_VERSION,
  ensureSchema,
  newerSchema,
  MASTER_KEY_CHECK,
  masterKeyCheck,
  matchesCheck,
  missingKey,
  openStore,
  readMasterKey,
  storeNotFound,
  wrongKey,
  type MasterKeySource,
  type MigrationResult,
  type Store,
} from './store/index.js';

/**
 * The composition root: opens the store, checks its schema, and wires every service with its
 * dependencies (clock, ids, store, logger). The HTTP server and the CLI both start from here.
 */
export interface AppOptions {
  /** Migrate an older store instead of refusing it (`svc serve --migrate`). */
  migrate?: boolean;
  /**
   * Create the data dir, the store and its master key when there is none (default true). Only
   * `svc serve` and `svc init` among the commands create: the others refuse a missing store.
   */
  create?: boolean;
  /** Open the store read-only and write nothing in the data dir (read-only commands). */
  readOnly?: boolean;
  log?: Logger;
  clock?: Clock;
  ids?: IdSource;
  /** DNS for requests to workspace-chosen targets (MCP upstreams); tests make names resolve where they need. */
  lookup?: LookupFn;
}

export interface App {
  settings: Readonly<Settings>;
  store: Store;
  log: Logger;
  clock: Clock;
  masterKey: Buffer;
  migration: MigrationResult | null;
  services: ReturnType<typeof createServices>;
  /** The public base address, as receipts name it (`iss`); the HTTP server sets it once bound. */
  publicUrl: { get(): string; set(fn: () => string): void };
  close(): Promise<void>;
}

function createServices(
  store: Store,
  settings: Readonly<Settings>,
  clock: Clock,
  ids: IdSource,
  masterKey: Buffer,
  issuer: () => string,
  log: Logger,
  lookup?: LookupFn,
) {
  const deps = { store, clock, ids };
  const signingKeys = createSigningKeys({ store, masterKey, clock });
  // The checkpoint origin names this deployment; fixed per workspace when its ledger starts.
  const originHost = settings.baseUrl ? new URL(settings.baseUrl).host : 'svc.local';
  const ledger = createLedger({ ...deps, signingKeys, originHost });
  const killSwitch = createKillSwitch({
    ...deps,
    ledger,
    bulkFreezeCeiling: settings.killSwitch.bulkFreezeCeiling,
    approvalTtlMs: settings.approvals.ttlHours * 3_600_000,
  });
  const receipts = createReceipts({
    store,
    clock,
    signingKeys,
    ledger,
    ttlSeconds: settings.receipts.ttlDays * 86_400,
    issuer,
  });
  // The plan.* settings are the free plan's allowances; a workspace on a paid plan is not held to them.
  const plans = createPlans({
    store,
    clock,
    ledger,
    free: {
      agents: settings.plan.agents,
      mandateRules: settings.plan.mandateRules,
      monthlyRequests: settings.plan.monthlyRequests,
      people: settings.plan.people,
    },
  });
  const agents = createAgentsService({ ...deps, ledger, maxAgents: (wid) => plans.allowances(wid).agents });
  const mandates = createMandatesService({ ...deps, ledger, maxRules: (wid) => plans.allowances(wid).mandateRules });
  const gate = createGate({ ...deps, ledger, receipts, approvalTtlMs: settings.approvals.ttlHours * 3_600_000 });
  const calls = createCallLog({ store, log, clock });
  const budgets = createBudgets({ ...deps, ledger, calls });
  const webhooks = createWebhooks({ ...deps, masterKey, ledger, log, settings: settings.webhooks });
  const gateway = createGateway({
    ...deps,
    ledger,
    log,
    advise: webhooks.advise,
    settings: settings.gateway,
    monthlyRequests: (wid) => plans.allowances(wid).monthlyRequests,
    seats: { people: (wid) => plans.allowances(wid).people, graceDays: settings.plan.seatGraceDays },
    calls,
    budgets,
  });
  // Upstream MCP servers are workspace-chosen targets: reached only through the vetted, pinned dispatcher.
  const mcpProxy = createMcpProxy({
    ...deps,
    masterKey,
    ledger,
    gate,
    version: '1',
    allowPrivateUpstreams: settings.mcp.allowPrivateUpstreams,
    dispatcher: safeDispatcher({
      allowPrivateTargets: settings.mcp.allowPrivateUpstreams,
      setting: PRIVATE_SETTING,
      ...(lookup ? { lookup } : {}),
    }),
  });
  const people = createPeopleService({
    ...deps,
    masterKey,
    ledger,
    sessionTtlMs: settings.session.ttlHours * 3_600_000,
    lockout: {
      maxFailures: settings.lockout.maxFailures,
      baseMs: settings.lockout.minutes * 60_000,
      maxMs: settings.lockout.maxMinutes * 60_000,
    },
  });
  const hookEvents = createHookEvents({ store, clock });
  const cards = createCards({ store, clock, ledger, gate, hookEvents });
  const approvals = createApprovals({ ...deps, ledger, receipts, killSwitch });
  const integrationRegistry = createIntegrationRegistry({ ...deps, masterKey, ledger });
  const once = createOnce(deps);
  const chat = createChat({
    ...deps,
    ledger,
    webhooks,
    registry: integrationRegistry,
    approvals,
    people,
    once,
    buttonKey: deriveKey(masterKey, 'chat-button'),
    publicUrl: issuer,
  });
  const githubCallbacks = createGithubCallbacks({
    ...deps,
    ledger,
    registry: integrationRegistry,
    log,
    settings: settings.webhooks,
  });
  // What every ledger record also writes, in its own write and in this order (ledger/subscribers.ts):
  // its webhook deliveries, then, for an approval requested, the card the chat relay gets.
  ledger.subscribe([webhooks.outbox, chat.cards]);
  // One sweeper for every table with a window or a retention (retention/policy.ts); the server starts it.
  const sweeper = createSweeper({
    store,
    clock,
    log,
    jobs: retentionJobs({ retentionDays: settings.retention.days }),
    everyMs: settings.retention.sweepIntervalMs,
    batch: settings.retention.sweepBatch,
    maxPerRun: settings.retention.sweepMaxPerRun,
  });
  return {
    people,
    agents,
    keys: createKeysService({ ...deps, ledger }),
    serviceTokens: createServiceTokensService({ ...deps, ledger }),
    mandates,
    blueprints: createBlueprintsService({ ...deps, ledger, agents, mandates, people }),
    signingKeys,
    ledger,
    receipts,
    gate,
    killSwitch,
    approvals,
    drills: createDrills({ ...deps, ledger, agents, mandates, killSwitch, gate, gateway, mcp: mcpProxy }),
    scorecard: createScorecard({ ...deps, ledger, agents, signingKeys, issuer }),
    calls,
    budgets,
    gateway,
    oauth: createOAuth({ ...deps, ledger, issuer }),
    mcpProxy,
    plans,
    cards,
    hookEvents,
    integrations: createIntegrations({ cards, hookEvents }),
    stripe: createStripeEvents({ cards, plans, hookEvents, ledger, clock, workspaceExists: people.workspaceExists }),
    integrationRegistry,
    githubCallbacks,
    once,
    webhooks,
    github: createGithub({ ...deps, ledger, gate, callbacks: githubCallbacks }),
    ssf: createSsf({ store, ledger, people, once }),
    ssfKeys: createSsfKeys({ clock, allowPrivateTargets: settings.webhooks.allowPrivateTargets }),
    chat,
    sweeper,
  };
}

export async function createApp(settings: Readonly<Settings>, options: AppOptions = {}): Promise<App> {
  const log = options.log ?? createLogger(settings.log.level);
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? randomIds;
  const create = options.create ?? true;
  const readOnly = options.readOnly ?? false;
  const store = openStore(settings.dataDir, { create, readOnly });
  let masterKey: Buffer;
  let migration: MigrationResult | null;
  let services: ReturnType<typeof createServices> | undefined;
  let publicUrl = () => settings.baseUrl ?? `http://${settings.server.host}:${settings.server.port}`;
  try {
    const source = { dataDir: settings.dataDir, fromSettings: settings.masterKey, file: settings.masterKeyFile };
    // A store this svc cannot read is named as such before its key is looked at.
    if (store.schemaVersion() > CURRENT_SCHEMA_VERSION) throw newerSchema(store.schemaVersion());
    const check = store.tables.meta.get(MASTER_KEY_CHECK);
    const fresh = store.schemaVersion() === 0 && check === undefined;
    if (readOnly && fresh) throw storeNotFound(resolve(settings.dataDir));
    const found = readMasterKey(source);
    if (!found && (!fresh || !create)) throw missingKey(source);
    masterKey = found ?? createMasterKey(settings.dataDir);
    if (typeof check === 'string' && !matchesCheck(masterKey, check)) throw wrongKey(source);
    migration = await ensureSchema(store, { migrate: options.migrate ?? false });
    // The services write through the measured store (a span and the write latency series per write).
    services = createServices(
      instrumentStore(store),
      settings,
      clock,
      ids,
      masterKey,
      () => publicUrl(),
      log,
      options.lookup,
    );
    if (check === undefined) await recordKeyCheck(store, masterKey, { readOnly, fresh, services, source });
  } catch (err) {
    await services?.gateway.close();
    await store.close();
    throw err;
  }
  return {
    settings,
    store,
    log,
    clock,
    masterKey,
    migration,
    services,
    publicUrl: {
      get: () => publicUrl(),
      set: (fn) => {
        publicUrl = fn;
      },
    },
    async close() {
      // Queued call records and budget spend are written before the store closes.
      await services.gateway.close();
      await store.close();
    },
  };
}

/**
 * The store keeps a check value of its master key from its first opening on. A store made before
 * there was one (an older svc) gets it on its first opening by this one, once the key has proved
 * itself on what the store already sealed with it (the current receipt signing key): a wrong key
 * is refused, never recorded. Read-only, the proof is made and nothing is written.
 */
async function recordKeyCheck(
  store: Store,
  masterKey: Buffer,
  context: {
    readOnly: boolean;
    fresh: boolean;
    services: ReturnType<typeof createServices>;
    source: MasterKeySource;
  },
): Promise<void> {
  if (!context.fresh) {
    try {
      context.services.signingKeys.current('receipt');
    } catch {
      throw wrongKey(context.source);
    }
  }
  if (context.readOnly) return;
  await store.write(() => {
    if (store.tables.meta.get(MASTER_KEY_CHECK) === undefined)
      store.tables.meta.put(MASTER_KEY_CHECK, masterKeyCheck(masterKey));
  });
}
