import { createAgentsService, type Agents } from './agents/index.js';
import { createBlueprintsService } from './blueprints/index.js';
import { createApprovalOpener, createApprovals, type ApprovalOpener, type Approvals } from './approvals/service.js';
import { createKeysService } from './keys/index.js';
import { createKillSwitch, type KillSwitch } from './killswitch/service.js';
import { createPlans, type Plans } from './plans/service.js';
import { createIntegrationRegistry, type IntegrationRegistry } from './integrations/registry.js';
import { createOnce, type Once } from './integrations/once.js';
import { createWebhooks, type Webhooks } from './webhooks/service.js';
import { createChat, type Chat } from './chat/service.js';
import { createLedger, type Ledger } from './ledger/service.js';
import { createMandates, type Mandates } from './mandates/index.js';
import { createAgentSigning, type AgentSigning } from './agent-signing/index.js';
import { createReceipts, type Receipts } from './receipts/service.js';
import { createSigningKeys, type SigningKeys } from './signing/service.js';
import { isoAt, systemClock, type Clock } from './lib/clock.js';
import type { KeysService } from './keys/service.js';
import type { ServiceTokensService } from './service-tokens/service.js';
import type { BlueprintsService } from './blueprints/service.js';
import type { Drills } from './drills/service.js';
import type { Scorecard } from './scorecard/service.js';
import type { CallLog } from './gateway/calls.js';
import type { Budgets } from './gateway/budgets.js';
import type { Gateway } from './gateway/service.js';
import type { McpProxy } from './mcp/proxy.js';
import type { Cards } from './integrations/cards.js';
import type { HookEvents } from './integrations/hook-events.js';
import type { Integrations } from './integrations/service.js';
import type { StripeEvents } from './integrations/stripe/service.js';
import type { GithubCallbacks } from './integrations/github/callbacks.js';
import type { Github } from './integrations/github/service.js';
import type { Ssf } from './integrations/ssf/service.js';
import type { AcpOrders } from './integrations/acp/service.js';
import type { SsfKeys } from './integrations/ssf/keys.js';
import type { Sweeper } from './retention/sweeper.js';
import type { Setup } from './setup/service.js';
import { lazily, type Lazily } from './lib/lazy.js';
import { randomIds, type IdSource } from './lib/ids.js';
import { createLogger, type Logger } from './lib/log.js';
import { createPeopleService, type People } from './people/index.js';
import { createServiceTokensService } from './service-tokens/index.js';
import type { LookupFn } from './lib/safe-target.js';
import type { Settings } from './settings/load.js';
import { deriveKey } from './lib/seal.js';
import { metaRepo } from './store/meta-repo.js';
import { createRateLimiter, type RateLimiter } from './http/rate-limit.js';
import { resolve } from 'node:path';
import {
  createMasterKey,
  CURRENT_SCHEMA_VERSION,
  ensureSchema,
  newerSchema,
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
import { chatRepo } from './chat/repo.js';
import type { PrincipalEnded } from './lib/principal-ended.js';
import { oauthRepo } from './oauth/repo.js';
import type { OAuth } from './oauth/service.js';
import { deviceRepo } from './oauth/device/repo.js';
import { createPendingActions } from './gate/pending.js';
import type { Gate } from './gate/service.js';
import type { Ap2 } from './ap2/service.js';

/**
 * The modules of the services only the server uses: the gate, the model gateway and its call log
 * and budgets, the MCP proxy, OAuth, the integrations (cards, Stripe, GitHub, SSF), drills, the
 * scorecard, the retention sweeper, and the store's measurements (metrics and spans). They bring
 * the heavy libraries (undici, the MCP SDK and zod, stripe, jose, prom-client, the AWS signer),
 * so they are imported here, by createApp, only for an app that builds every service (the server);
 * the app of a command that opens the store (`lazy`: `svc init` and the `--local` commands) uses
 * none of them and never loads them.
 */
function loadServerModules() {
  return importAll({
    gate: import('./gate/service.js'),
    ap2: import('./ap2/service.js'),
    drills: import('./drills/service.js'),
    scorecard: import('./scorecard/service.js'),
    calls: import('./gateway/calls.js'),
    budgets: import('./gateway/budgets.js'),
    gateway: import('./gateway/service.js'),
    oauth: import('./oauth/service.js'),
    clientMetadata: import('./oauth/client-metadata.js'),
    mcp: import('./mcp/proxy.js'),
    localServers: import('./mcp/local-servers.js'),
    cards: import('./integrations/cards.js'),
    hookEvents: import('./integrations/hook-events.js'),
    integrations: import('./integrations/service.js'),
    stripe: import('./integrations/stripe/service.js'),
    github: import('./integrations/github/service.js'),
    githubCallbacks: import('./integrations/github/callbacks.js'),
    ssf: import('./integrations/ssf/service.js'),
    acp: import('./integrations/acp/service.js'),
    ssfKeys: import('./integrations/ssf/keys.js'),
    retention: import('./retention/index.js'),
    observedStore: import('./observability/store.js'),
    safeTarget: import('./lib/safe-target.js'),
    setup: import('./setup/service.js'),
  });
}

/** The modules of a record of imports, loaded together, under the same names. */
async function importAll<T extends Record<string, Promise<unknown>>>(
  imports: T,
): Promise<{ [K in keyof T]: Awaited<T[K]> }> {
  const names = Object.keys(imports);
  const modules = await Promise.all(Object.values(imports));
  return Object.fromEntries(names.map((name, i) => [name, modules[i]])) as { [K in keyof T]: Awaited<T[K]> };
}
type ServerModules = Awaited<ReturnType<typeof loadServerModules>>;

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
  /** Certificates trusted for Client ID Metadata Documents instead of the system's (tests serving https on loopback). */
  clientMetadataCa?: string;
  /**
   * Build each service on first use instead of all at once: for a `--local` command, which uses
   * a few. The server builds them all (the default), so a wiring mistake shows at start. A lazy
   * app loads none of the server-only services' modules (loadServerModules) and does not measure
   * its store.
   */
  lazy?: boolean;
}

export interface App {
  settings: Readonly<Settings>;
  store: Store;
  log: Logger;
  clock: Clock;
  masterKey: Buffer;
  migration: MigrationResult | null;
  services: Services;
  /** The public base address, as receipts name it (`iss`); the HTTP server sets it once bound. */
  publicUrl: { get(): string; set(fn: () => string): void };
  close(): Promise<void>;
}

/** Every service of the app, by name; built on first use (see createServices). */
export interface Services {
  people: People;
  agents: Agents;
  keys: KeysService;
  serviceTokens: ServiceTokensService;
  mandates: Mandates;
  /** Agents' signed HTTP requests (Web Bot Auth) and their key directory. */
  agentSigning: AgentSigning;
  blueprints: BlueprintsService;
  signingKeys: SigningKeys;
  ledger: Ledger;
  receipts: Receipts;
  gate: Gate;
  /** AP2 in: trusted issuers, holder keys, imported mandates, presentations at authorize. */
  ap2: Ap2;
  killSwitch: KillSwitch;
  approvals: Approvals;
  drills: Drills;
  scorecard: Scorecard;
  calls: CallLog;
  budgets: Budgets;
  gateway: Gateway;
  oauth: OAuth;
  mcpProxy: McpProxy;
  /** Each agent's gate requests per minute: one budget for the gate's HTTP routes and /mcp. */
  gateLimiter: RateLimiter;
  plans: Plans;
  cards: Cards;
  hookEvents: HookEvents;
  integrations: Integrations;
  stripe: StripeEvents;
  integrationRegistry: IntegrationRegistry;
  githubCallbacks: GithubCallbacks;
  once: Once;
  webhooks: Webhooks;
  github: Github;
  ssf: Ssf;
  /** A merchant's checkout events (ACP webhooks). */
  acp: AcpOrders;
  ssfKeys: SsfKeys;
  chat: Chat;
  sweeper: Sweeper;
  /** svc apply and svc export: the workspace as a file. */
  setup: Setup;
}

/**
 * The principal-ended hooks (lib/principal-ended.ts): an ended agent's or person's grants in the
 * other domains, each ended by its own domain's repo inside the caller's write.
 */
export function principalEndedHooks(store: Store): PrincipalEnded {
  const oauth = oauthRepo(store);
  const chat = chatRepo(store);
  const logins = deviceRepo(store);
  return {
    async agent(wid, match, why, nowMs) {
      await oauth.endConnections(wid, match, why, nowMs);
    },
    async person(wid, uid, why, nowMs) {
      const connectionsEnded = (await oauth.endConnections(wid, { userId: uid }, why, nowMs)).length;
      await logins.endLoginsOf(uid, why, isoAt(nowMs), wid);
      return { connectionsEnded, chatMappingsEnded: await chat.endMappingsOf(wid, uid) };
    },
    async credentialsChanged(uid, why, nowMs) {
      await logins.endLoginsOf(uid, why, isoAt(nowMs));
    },
  };
}

/**
 * The wiring of every service with its dependencies, each built on first use (lib/lazy.ts): the
 * server builds them all at once (createApp), a `--local` command only those it uses. The ledger
 * is never used without its subscribers: whoever first reaches it also wires them.
 */
/** Factories of some of the services, each given the services it may use. */
type Factories<K extends keyof Services> = { [N in K]: (s: Services) => Services[N] };

/** What every factory may be given: the app's parts and the shared pieces of its wiring. */
interface Wiring {
  store: Store;
  settings: Readonly<Settings>;
  clock: Clock;
  ids: IdSource;
  masterKey: Buffer;
  issuer: () => string;
  log: Logger;
  lookup: LookupFn | undefined;
  clientMetadataCa: string | undefined;
  deps: { store: Store; clock: Clock; ids: IdSource };
  principalEnded: PrincipalEnded;
  /**
   * Opening an approval (the gate's reviews, the kill switch's freezes past the ceiling): the
   * approvals' own write, apart from the approvals service, which itself needs the kill switch.
   */
  approvalOpener: ApprovalOpener;
  /**
   * The server-only services' modules (loadServerModules); a `--local` app has none, and reaching
   * one of those services there is a mistake in the command, not something to load late.
   */
  server(name: keyof Services): ServerModules;
  approvalTtlMs: number;
  /** The checkpoint origin names this deployment; fixed per workspace when its ledger starts. */
  originHost: string;
}

function createServices(
  store: Store,
  settings: Readonly<Settings>,
  clock: Clock,
  ids: IdSource,
  masterKey: Buffer,
  issuer: () => string,
  log: Logger,
  modules: ServerModules | undefined,
  lookup?: LookupFn,
  clientMetadataCa?: string,
): Lazily<Services> {
  const w: Wiring = {
    store,
    settings,
    clock,
    ids,
    masterKey,
    issuer,
    log,
    lookup,
    clientMetadataCa,
    deps: { store, clock, ids },
    principalEnded: principalEndedHooks(store),
    approvalOpener: createApprovalOpener(store),
    server: (name) => {
      if (!modules) throw new Error(`service ${name} is the server's: an app opened for a --local command has none`);
      return modules;
    },
    approvalTtlMs: settings.approvals.ttlHours * 3_600_000,
    originHost: settings.baseUrl ? new URL(settings.baseUrl).host : 'svc.local',
  };
  return lazily<Services>(
    { ...decisionsServices(w), ...trafficServices(w), ...integrationsServices(w) },
    {
      // What every ledger record also writes, in its own write and in this order (ledger/subscribers.ts):
      // its webhook deliveries, then, for an approval requested, the card the chat relay gets.
      ledger: (ledger, s) => ledger.subscribe([s.webhooks.outbox, s.chat.cards]),
    },
  );
}

/**
 * The decision side: the ledger and its signing keys, people, agents and their mandates, keys and
 * tokens, the gate, approvals, the kill switch, receipts, plans, drills and the scorecard.
 */
function decisionsServices(
  w: Wiring,
): Factories<
  | 'signingKeys'
  | 'ledger'
  | 'killSwitch'
  | 'receipts'
  | 'plans'
  | 'agents'
  | 'mandates'
  | 'agentSigning'
  | 'gate'
  | 'ap2'
  | 'approvals'
  | 'keys'
  | 'serviceTokens'
  | 'blueprints'
  | 'drills'
  | 'scorecard'
  | 'people'
> {
  const {
    store,
    settings,
    clock,
    masterKey,
    issuer,
    deps,
    principalEnded,
    approvalOpener,
    server,
    approvalTtlMs,
    originHost,
  } = w;
  return {
    signingKeys: () => createSigningKeys({ store, masterKey, clock }),
    ledger: (s) => createLedger({ ...deps, signingKeys: s.signingKeys, originHost }),
    killSwitch: (s) =>
      createKillSwitch({
        ...deps,
        ledger: s.ledger,
        bulkFreezeCeiling: settings.killSwitch.bulkFreezeCeiling,
        approvalTtlMs,
        agents: s.agents,
        approvals: approvalOpener,
        principalEnded,
      }),
    receipts: (s) =>
      createReceipts({
        store,
        clock,
        signingKeys: s.signingKeys,
        ledger: s.ledger,
        ttlSeconds: settings.receipts.ttlDays * 86_400,
        issuer,
      }),
    // The plan.* settings are the free plan's allowances; a workspace on a paid plan is not held to them.
    plans: (s) =>
      createPlans({
        store,
        clock,
        ledger: s.ledger,
        free: {
          agents: settings.plan.agents,
          mandateRules: settings.plan.mandateRules,
          monthlyRequests: settings.plan.monthlyRequests,
          people: settings.plan.people,
        },
      }),
    agents: (s) =>
      createAgentsService({
        ...deps,
        ledger: s.ledger,
        maxAgents: async (wid) => (await s.plans.allowances(wid)).agents,
        principalEnded,
      }),
    mandates: (s) =>
      createMandates({
        ...deps,
        ledger: s.ledger,
        maxRules: async (wid) => (await s.plans.allowances(wid)).mandateRules,
      }),
    agentSigning: (s) =>
      createAgentSigning({ store, clock, masterKey, ledger: s.ledger, mandates: s.mandates, baseUrl: issuer }),
    gate: (s) =>
      server('gate').gate.createGate({
        ...deps,
        ledger: s.ledger,
        receipts: s.receipts,
        approvals: approvalOpener,
        approvalTtlMs,
        assetCurrencies: settings.gate.assetCurrencies,
        ap2: s.ap2,
      }),
    ap2: (s) => server('ap2').ap2.createAp2({ ...deps, ledger: s.ledger, mandates: s.mandates }),
    approvals: (s) =>
      createApprovals({
        ...deps,
        ledger: s.ledger,
        actions: createPendingActions({ store, ledger: s.ledger, receipts: s.receipts, clock: deps.clock }),
        killSwitch: s.killSwitch,
      }),
    keys: (s) => createKeysService({ ...deps, ledger: s.ledger }),
    serviceTokens: (s) => createServiceTokensService({ ...deps, ledger: s.ledger }),
    blueprints: (s) =>
      createBlueprintsService({
        ...deps,
        ledger: s.ledger,
        agents: s.agents,
        mandates: s.mandates,
        people: s.people,
      }),
    drills: (s) =>
      server('drills').drills.createDrills({
        ...deps,
        ledger: s.ledger,
        agents: s.agents,
        mandates: s.mandates,
        killSwitch: s.killSwitch,
        gate: s.gate,
        gateway: s.gateway,
        mcp: s.mcpProxy,
      }),
    scorecard: (s) =>
      server('scorecard').scorecard.createScorecard({
        ...deps,
        ledger: s.ledger,
        agents: s.agents,
        signingKeys: s.signingKeys,
        issuer,
      }),
    people: (s) =>
      createPeopleService({
        ...deps,
        masterKey,
        ledger: s.ledger,
        sessionTtlMs: settings.session.ttlHours * 3_600_000,
        principalEnded,
        lockout: {
          maxFailures: settings.lockout.maxFailures,
          baseMs: settings.lockout.minutes * 60_000,
          maxMs: settings.lockout.maxMinutes * 60_000,
        },
      }),
  };
}

/**
 * The traffic that passes through: the model gateway with its call log and budgets, the gate's
 * per-agent limiter, the MCP proxy, and OAuth for the clients that connect to it.
 */
function trafficServices(w: Wiring): Factories<'calls' | 'budgets' | 'gateway' | 'gateLimiter' | 'mcpProxy' | 'oauth'> {
  const { store, settings, clock, masterKey, issuer, log, lookup, clientMetadataCa, deps, server } = w;
  return {
    calls: () => server('calls').calls.createCallLog({ store, log, clock }),
    budgets: (s) =>
      server('budgets').budgets.createBudgets({
        ...deps,
        ledger: s.ledger,
        calls: s.calls,
        reservationMs: server('budgets').budgets.reservationMsOf(settings.gateway),
      }),
    gateway: (s) =>
      server('gateway').gateway.createGateway({
        ...deps,
        ledger: s.ledger,
        log,
        advise: s.webhooks.advise,
        settings: settings.gateway,
        allowances: (wid) => s.plans.allowances(wid),
        seats: { graceDays: settings.plan.seatGraceDays },
        calls: s.calls,
        budgets: s.budgets,
      }),
    // Upstream MCP servers are workspace-chosen targets: reached only through the vetted, pinned dispatcher.
    gateLimiter: () =>
      createRateLimiter({ limit: settings.rateLimits.gatePerMinute, scope: 'gate', counters: store.counters, clock }),
    mcpProxy: (s) =>
      server('mcpProxy').mcp.createMcpProxy({
        ...deps,
        masterKey,
        ledger: s.ledger,
        gate: s.gate,
        gateLimiter: s.gateLimiter,
        dataLoss: async (wid) => (await s.gateway.settingsOf(wid)).dataLoss,
        version: '1',
        allowPrivateUpstreams: settings.mcp.allowPrivateUpstreams,
        limits: {
          timeoutMs: settings.mcp.upstreamTimeoutMs,
          callTimeoutMs: settings.mcp.upstreamCallTimeoutMs,
          sessionsPerAgent: settings.mcp.upstreamSessionsPerAgent,
          sessionsPerServer: settings.mcp.upstreamSessionsPerServer,
          idleMs: settings.mcp.upstreamIdleMs,
        },
        rules: async (wid, aid) => (await s.mandates.get(wid, aid)).rules,
        local: server('mcpProxy').localServers.createLocalServers({
          servers: settings.mcp.localServers,
          log,
          now: () => clock.now(),
          timeoutMs: settings.mcp.upstreamTimeoutMs,
        }),
        dispatcher: server('mcpProxy').safeTarget.safeDispatcher({
          allowPrivateTargets: settings.mcp.allowPrivateUpstreams,
          setting: server('mcpProxy').mcp.PRIVATE_SETTING,
          ...(lookup ? { lookup } : {}),
        }),
      }),
    // A URL client_id's metadata document is a target chosen by whoever sends the request: the vetted dispatcher.
    oauth: (s) =>
      server('oauth').oauth.createOAuth({
        ...deps,
        ledger: s.ledger,
        issuer,
        refreshGraceMs: settings.oauth.refreshGraceSeconds * 1000,
        graceKey: deriveKey(masterKey, 'oauth-refresh-grace'),
        device: {
          deviceCodeTtlSeconds: settings.oauth.deviceCodeTtlSeconds,
          pollIntervalSeconds: settings.oauth.devicePollIntervalSeconds,
          accessTtlSeconds: settings.oauth.personAccessTtlSeconds,
          refreshTtlDays: settings.oauth.personRefreshTtlDays,
        },
        clientMetadata: server('oauth').clientMetadata.createClientMetadata({
          clock,
          timeoutMs: settings.oauth.clientMetadataTimeoutMs,
          dispatcher: server('oauth').safeTarget.safeDispatcher({
            allowPrivateTargets: settings.oauth.allowPrivateClientMetadata,
            setting: 'oauth.allowPrivateClientMetadata',
            connectTimeoutMs: settings.oauth.clientMetadataTimeoutMs,
            ...(lookup ? { lookup } : {}),
            ...(clientMetadataCa ? { ca: clientMetadataCa } : {}),
          }),
        }),
      }),
  };
}

/**
 * What talks to the world outside: webhooks, chat, cards and Stripe, GitHub, SSF, the integration
 * registry, the setup file, and the retention sweeper.
 */
function integrationsServices(
  w: Wiring,
): Factories<
  | 'webhooks'
  | 'hookEvents'
  | 'cards'
  | 'integrationRegistry'
  | 'setup'
  | 'once'
  | 'chat'
  | 'githubCallbacks'
  | 'sweeper'
  | 'integrations'
  | 'stripe'
  | 'github'
  | 'ssf'
  | 'acp'
  | 'ssfKeys'
> {
  const { store, settings, clock, masterKey, issuer, log, deps, server } = w;
  return {
    webhooks: (s) => createWebhooks({ ...deps, masterKey, ledger: s.ledger, log, settings: settings.webhooks }),
    hookEvents: () => server('hookEvents').hookEvents.createHookEvents({ store, clock }),
    cards: (s) =>
      server('cards').cards.createCards({ store, clock, ledger: s.ledger, gate: s.gate, hookEvents: s.hookEvents }),
    integrationRegistry: (s) => createIntegrationRegistry({ ...deps, masterKey, ledger: s.ledger }),
    setup: (s) =>
      server('setup').setup.createSetup({
        store,
        clock,
        ledger: s.ledger,
        people: s.people,
        agents: s.agents,
        mandates: s.mandates,
        blueprints: s.blueprints,
        budgets: s.budgets,
        mcp: s.mcpProxy,
        registry: s.integrationRegistry,
      }),
    once: () => createOnce(deps),
    chat: (s) =>
      createChat({
        ...deps,
        ledger: s.ledger,
        webhooks: s.webhooks,
        registry: s.integrationRegistry,
        approvals: s.approvals,
        people: s.people,
        once: s.once,
        buttonKey: deriveKey(masterKey, 'chat-button'),
        publicUrl: issuer,
      }),
    githubCallbacks: (s) =>
      server('githubCallbacks').githubCallbacks.createGithubCallbacks({
        ...deps,
        ledger: s.ledger,
        registry: s.integrationRegistry,
        log,
        settings: settings.webhooks,
      }),
    // One sweeper for every table with a window or a retention (retention/policy.ts); the server starts it.
    sweeper: () =>
      server('sweeper').retention.createSweeper({
        store,
        clock,
        log,
        jobs: server('sweeper').retention.retentionJobs({ retentionDays: settings.retention.days }),
        everyMs: settings.retention.sweepIntervalMs,
        batch: settings.retention.sweepBatch,
        maxPerRun: settings.retention.sweepMaxPerRun,
      }),
    integrations: (s) =>
      server('integrations').integrations.createIntegrations({ cards: s.cards, hookEvents: s.hookEvents }),
    stripe: (s) =>
      server('stripe').stripe.createStripeEvents({
        cards: s.cards,
        plans: s.plans,
        hookEvents: s.hookEvents,
        ledger: s.ledger,
        clock,
        workspaceExists: s.people.workspaceExists,
      }),
    github: (s) =>
      server('github').github.createGithub({ ...deps, ledger: s.ledger, gate: s.gate, callbacks: s.githubCallbacks }),
    ssf: (s) => server('ssf').ssf.createSsf({ store, ledger: s.ledger, people: s.people, once: s.once }),
    acp: (s) => server('acp').acp.createAcpOrders({ store, ledger: s.ledger, once: s.once }),
    ssfKeys: () =>
      server('ssfKeys').ssfKeys.createSsfKeys({ clock, allowPrivateTargets: settings.webhooks.allowPrivateTargets }),
  };
}

export async function createApp(settings: Readonly<Settings>, options: AppOptions = {}): Promise<App> {
  const log = options.log ?? createLogger(settings.log.level);
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? randomIds;
  const create = options.create ?? true;
  const readOnly = options.readOnly ?? false;
  const store = await openStore(settings.dataDir, { create, readOnly, url: settings.storeUrl ?? undefined });
  let masterKey: Buffer;
  let migration: MigrationResult | null;
  let wired: Lazily<Services> | undefined;
  let publicUrl = () => settings.baseUrl ?? `http://${settings.server.host}:${settings.server.port}`;
  try {
    const source = { dataDir: settings.dataDir, fromSettings: settings.masterKey, file: settings.masterKeyFile };
    // A store this svc cannot read is named as such before its key is looked at.
    const [version, check] = await Promise.all([store.schemaVersion(), metaRepo(store).keyCheck()]);
    if (version > CURRENT_SCHEMA_VERSION) throw newerSchema(version);
    const fresh = version === 0 && check === undefined;
    if (readOnly && fresh) throw storeNotFound(resolve(settings.dataDir));
    const found = readMasterKey(source);
    if (!found && (!fresh || !create)) throw missingKey(source);
    masterKey = found ?? createMasterKey(settings.dataDir);
    if (typeof check === 'string' && !matchesCheck(masterKey, check)) throw wrongKey(source);
    migration = await ensureSchema(store, { migrate: options.migrate ?? false });
    // Every service of the server (loadServerModules); a --local command's app only the ones it uses.
    const modules = options.lazy ? undefined : await loadServerModules();
    // The server's services write through the measured store (a span and the write latency series
    // per write); a --local command exports neither metrics nor spans, so its store is not measured.
    wired = createServices(
      modules ? modules.observedStore.instrumentStore(store) : store,
      settings,
      clock,
      ids,
      masterKey,
      () => publicUrl(),
      log,
      modules,
      options.lookup,
      options.clientMetadataCa,
    );
    // The server builds every service now; a --local command (lazy) only those it uses.
    if (!options.lazy) wired.buildAll();
    if (check === undefined) await recordKeyCheck(store, masterKey, { readOnly, fresh, services: wired.self, source });
  } catch (err) {
    if (wired?.built('gateway')) await wired.self.gateway.close();
    await store.close();
    throw err;
  }
  const built = wired;
  const services = built.self;
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
      if (built.built('gateway')) await services.gateway.close();
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
    services: Services;
    source: MasterKeySource;
  },
): Promise<void> {
  if (!context.fresh) {
    try {
      await context.services.signingKeys.current('receipt');
    } catch {
      throw wrongKey(context.source);
    }
  }
  if (context.readOnly) return;
  const meta = metaRepo(store);
  const check = masterKeyCheck(masterKey);
  await store.write(async () => {
    if ((await meta.keyCheck()) === undefined) await meta.putKeyCheck(check);
  });
}
