import { randomUUID } from 'node:crypto';
import { createServer as createNodeServer, type Server as NodeServer } from 'node:http';
import { hostname } from 'node:os';
import Hapi from '@hapi/hapi';
import type { Server } from '@hapi/hapi';
import { agentsRoutes } from './agents/http.js';
import { blueprintsRoutes } from './blueprints/http.js';
import { approvalsRoutes } from './approvals/http.js';
import type { App } from './app.js';
import { consoleRoutes } from './console/http.js';
import { gateRoutes } from './gate/http.js';
import { agentSigningRoutes } from './agent-signing/http.js';
import { gatewayRoutes } from './gateway/http.js';
import { mcpRoutes } from './mcp/http.js';
import { credentialLive } from './mcp/sessions.js';
import { oauthRoutes } from './oauth/http.js';
import { deviceRoutes } from './oauth/device/http.js';
import { API_VERSION } from './http/front-door.js';
import { keysRoutes } from './keys/http.js';
import { killSwitchRoutes } from './killswitch/http.js';
import { drillsRoutes } from './drills/http.js';
import { scorecardRoutes } from './scorecard/http.js';
import { serviceTokensRoutes } from './service-tokens/http.js';
import { ledgerRoutes, ledgerTilesRoutes } from './ledger/http.js';
import { leaseTtlMs } from './ledger/service.js';
import { createLedgerTiles } from './ledger/tiles.js';
import { createLedgerWitnesses } from './ledger/witness.js';
import { mandatesRoutes } from './mandates/http.js';
import { ap2Routes } from './ap2/http.js';
import { receiptsRoutes } from './receipts/http.js';
import { peopleRoutes } from './people/http.js';
import { deriveKey } from './lib/seal.js';
import type { Logger } from './lib/log.js';
import { clientAddressOf } from './http/client-address.js';
import { registerAgentKey } from './http/auth/agent-key.js';
import { registerDenyByDefault } from './http/auth/deny.js';
import { registerInbound } from './http/auth/signature.js';
import { integrationsRoutes } from './integrations/http.js';
import { stripeRoutes } from './integrations/stripe/http.js';
import { stripeBillingVerifier, stripeVerifier } from './integrations/stripe/signature.js';
import { plansRoutes } from './plans/http.js';
import { createRefusals, svcSignatureVerifier, type Refusals } from './http/inbound.js';
import { githubRoutes } from './integrations/github/http.js';
import { githubVerifier } from './integrations/github/verifier.js';
import { ssfRoutes } from './integrations/ssf/http.js';
import { acpRoutes } from './integrations/acp/http.js';
import { acpVerifier } from './integrations/acp/verifier.js';
import { ssfVerifier } from './integrations/ssf/verifier.js';
import { webhooksRoutes } from './webhooks/http.js';
import { chatRoutes } from './chat/http.js';
import { slackVerifier } from './chat/slack.js';
import { registerServiceToken } from './http/auth/service-token.js';
import { registerPermissions } from './http/auth/permission.js';
import { registerSession, sessionStrategies } from './http/auth/session.js';
import { setupRoutes } from './setup/http.js';
import { registerWorkspaceKey } from './http/auth/workspace-key.js';
import { answerClientErrors } from './http/client-error.js';
import { installFrontDoor } from './http/front-door.js';
import { trackDrain } from './http/drain.js';
import { createBodyLimits } from './http/body-limits.js';
import { payloadFailAction, validationFailAction } from './http/errors.js';
import { createGuards, type Guards } from './http/guards.js';
import { logRequest, pipeline } from './http/pipeline.js';
import { healthAnswer, systemRoutes } from './http/system.js';
import { createObservability } from './observability/index.js';
import { apiDocsRoutes, metricsRoutes } from './observability/http.js';

/**
 * Builds the hapi server, in order: the front door on the Node server (ids, headers, health),
 * the response pipeline (so that every later failure is rendered), the auth strategies with
 * deny-by-default, then the route plugins, each given the guards its routes attach.
 *
 * Hardening: the Node server checks headersTimeout and requestTimeout every
 * connectionsCheckingInterval (about a second, not Node's 30 s default), so slow-loris sockets
 * are closed; bodies over the limit are refused before they are read (body-limits.ts).
 */
export interface HttpServer {
  server: Server;
  /** The public base address: configured, or as bound. */
  baseUrl(): string;
  start(): Promise<void>;
  /** Drains (drain.ts): refuses new connections, answers what is in flight, up to the shutdown timeout. */
  stop(): Promise<void>;
  /** The separate metrics listener's /metrics address (`--metrics-port`), once started; else null. */
  metricsUrl(): string | null;
}

/**
 * How the server binds: `port` instead of the settings' (a worker told by its primary), and
 * `reusePort` to bind its own socket beside other processes on the same port (SO_REUSEPORT).
 */
export interface ListenOptions {
  port?: number;
  reusePort?: boolean;
}

/** What the route plugins are given besides their services. */
interface RouteContext {
  app: App;
  production: boolean;
  guards: Guards;
  refusals: Refusals;
  baseUrl: () => string;
}

/** The Node server hapi listens with: its timeouts, and its own socket beside other processes' (`reusePort`). */
function nodeListener(settings: App['settings'], listen: ListenOptions): NodeServer {
  const listener = createNodeServer({
    headersTimeout: settings.server.headersTimeoutMs,
    requestTimeout: settings.server.requestTimeoutMs,
    connectionsCheckingInterval: settings.server.connectionsCheckingIntervalMs,
  });
  if (listen.reusePort) {
    // hapi calls listen(port, [host,] done); `exclusive` keeps a cluster worker's socket its own.
    const plain = listener.listen.bind(listener);
    listener.listen = ((port: number, ...rest: unknown[]) => {
      const done = rest.pop() as () => void;
      const host = rest[0] as string | undefined;
      return plain({ port, host, reusePort: true, exclusive: true }, done);
    }) as typeof listener.listen;
  }
  return listener;
}

/** The hapi server and what every route shares: load shedding, body limits, validation, caching, cookies. */
function hapiServer(settings: App['settings'], listener: NodeServer, listen: ListenOptions) {
  return Hapi.server({
    listener,
    host: settings.server.host,
    port: listen.port ?? settings.server.port,
    autoListen: true,
    debug: false,
    router: { stripTrailingSlash: false },
    // Load shedding: hapi checks these at dispatch, before any route work (503 overloaded).
    load:
      settings.load.sampleIntervalMs === 0
        ? { sampleInterval: 0 }
        : {
            sampleInterval: settings.load.sampleIntervalMs,
            maxEventLoopDelay: settings.load.maxEventLoopDelayMs,
            maxHeapUsedBytes: settings.load.maxHeapUsedBytes,
            maxRssBytes: settings.load.maxRssBytes,
          },
    routes: {
      payload: { maxBytes: settings.limits.bodyBytes, failAction: payloadFailAction },
      validate: {
        options: { abortEarly: false, errors: { wrap: { label: '"' } } },
        failAction: validationFailAction,
      },
      // No answer is served in parts: a Range header is ignored (hapi's own 416 had no catalogue shape).
      response: { emptyStatusCode: 204, ranges: false },
      // Answers can carry secrets shown once (minted keys): never cached anywhere.
      cache: { otherwise: 'no-store' },
      // A malformed cookie (planted by a sibling site, say) is ignored, never a 400 on every route.
      state: { parse: true, failAction: 'ignore' },
      // Security headers are stamped once per request on the raw response (front-door.ts).
      security: false,
    },
  });
}

/**
 * The auth strategies, each given the service that knows its credential, then deny-by-default,
 * the session cookie, and the check of the permission a console route declares.
 */
async function registerAuth(server: Server, app: App, production: boolean, baseUrl: () => string): Promise<Refusals> {
  const { settings, services, clock } = app;
  registerAgentKey(server, {
    keys: services.keys,
    oauth: services.oauth,
    baseUrl,
    gateLimiter: services.gateLimiter,
  });
  registerWorkspaceKey(server, { keys: services.keys });
  registerServiceToken(server, {
    tokens: services.serviceTokens,
    trustedProxies: settings.server.trustedProxies,
    persons: services.oauth.device,
  });
  const registry = services.integrationRegistry;
  const refusals = createRefusals(registry);
  const billingSecrets = [settings.billing.stripeSigningSecret, settings.billing.stripePreviousSigningSecret].filter(
    (s): s is string => s !== null,
  );
  registerInbound(server, clock, [
    svcSignatureVerifier('issuer', registry),
    githubVerifier(registry),
    acpVerifier(registry),
    ssfVerifier({ registry, keys: services.ssfKeys, once: services.once, clock }),
    stripeVerifier(registry, clock, billingSecrets),
    stripeBillingVerifier(clock, billingSecrets),
    svcSignatureVerifier('chat-relay', registry, (w, signature) =>
      services.chat.claimSignature(`chat-relay/${w}`, signature),
    ),
    slackVerifier(registry, (signature) => services.chat.claimSignature('slack', signature)),
  ]);
  registerDenyByDefault(server);
  await registerSession(server, {
    production,
    secure: production || (settings.baseUrl?.startsWith('https://') ?? false),
    cookiePassword: deriveKey(app.masterKey, 'cookie-seal').toString('hex'),
    ttlMs: settings.session.ttlHours * 3_600_000,
    people: services.people,
  });
  registerPermissions(server, { people: services.people, sessionStrategies: sessionStrategies(production) });
  return refusals;
}

/** People, keys, agents and their mandates, the gate, receipts, the ledger, tokens, drills, the kill switch, approvals. */
async function registerCoreRoutes(server: Server, { app, production, guards }: RouteContext): Promise<void> {
  const { services } = app;
  await server.register({ plugin: peopleRoutes, options: { people: services.people, production, guards } });
  await server.register({
    plugin: keysRoutes,
    options: { keys: services.keys, agents: services.agents, production, guards },
  });
  await server.register({
    plugin: agentsRoutes,
    options: { agents: services.agents, blueprints: services.blueprints, production, guards },
  });
  await server.register({
    plugin: blueprintsRoutes,
    options: { blueprints: services.blueprints, agents: services.agents, production, guards },
  });
  await server.register({
    plugin: mandatesRoutes,
    options: { mandates: services.mandates, agents: services.agents, production, guards },
  });
  await server.register({
    plugin: ap2Routes,
    options: { ap2: services.ap2, agents: services.agents, production, guards },
  });
  await server.register({ plugin: gateRoutes, options: { gate: services.gate } });
  await server.register({ plugin: agentSigningRoutes, options: { signing: services.agentSigning, guards } });
  await server.register({
    plugin: receiptsRoutes,
    options: { receipts: services.receipts, signingKeys: services.signingKeys, guards },
  });
  await server.register({ plugin: ledgerRoutes, options: { ledger: services.ledger, production, guards } });
  await server.register({
    plugin: ledgerTilesRoutes,
    options: {
      tiles: createLedgerTiles({ store: app.store }),
      people: services.people,
      production,
      guards,
      public: app.settings.ledger.public,
    },
  });
  await server.register({
    plugin: serviceTokensRoutes,
    options: { tokens: services.serviceTokens, production, guards },
  });
  await server.register({ plugin: drillsRoutes, options: { drills: services.drills } });
  await server.register({ plugin: scorecardRoutes, options: { scorecard: services.scorecard } });
  await server.register({
    plugin: killSwitchRoutes,
    options: { killSwitch: services.killSwitch, agents: services.agents, production, guards },
  });
  await server.register({ plugin: approvalsRoutes, options: { approvals: services.approvals, production, guards } });
}

/** The model gateway and the MCP server. */
async function registerGatewayRoutes(server: Server, { app, production, guards, baseUrl }: RouteContext) {
  const { settings, services, clock } = app;
  await server.register({
    plugin: gatewayRoutes,
    options: {
      gateway: services.gateway,
      budgets: services.budgets,
      calls: services.calls,
      settings: settings.gateway,
      production,
      guards,
    },
  });
  await server.register({
    plugin: mcpRoutes,
    options: {
      gate: services.gate,
      gateLimiter: services.gateLimiter,
      allowedOrigins: settings.mcp.allowedOrigins,
      proxy: services.mcpProxy,
      baseUrl,
      version: API_VERSION,
      production,
      guards,
      stillValid: credentialLive(app.store, () => clock.now()),
    },
  });
}

/** Integrations (cards, the payment provider, plans, the code host, the identity provider), webhooks, chat. */
async function registerIntegrationRoutes(server: Server, { app, production, guards, refusals }: RouteContext) {
  const { services } = app;
  await server.register({
    plugin: integrationsRoutes,
    options: {
      integrations: services.integrations,
      cards: services.cards,
      registry: services.integrationRegistry,
      refusals,
      production,
      guards,
    },
  });
  await server.register({
    plugin: stripeRoutes,
    options: { stripe: services.stripe, cards: services.cards, refusals, production, guards },
  });
  await server.register({ plugin: plansRoutes, options: { plans: services.plans, production } });
  await server.register({ plugin: githubRoutes, options: { github: services.github, refusals, production, guards } });
  await server.register({ plugin: ssfRoutes, options: { ssf: services.ssf, refusals } });
  await server.register({ plugin: acpRoutes, options: { acp: services.acp, refusals } });
  await server.register({ plugin: webhooksRoutes, options: { webhooks: services.webhooks, production, guards } });
  await server.register({ plugin: chatRoutes, options: { chat: services.chat, refusals, production, guards } });
}

/** The authorization server, setup, `svc login`'s device flow, and the console's pages. */
async function registerSignInRoutes(server: Server, { app, production, guards, baseUrl }: RouteContext) {
  const { settings, services } = app;
  await server.register({
    plugin: oauthRoutes,
    options: {
      oauth: services.oauth,
      production,
      guards,
      consentKey: deriveKey(app.masterKey, 'oauth-consent'),
      issuer: baseUrl,
    },
  });
  await server.register({ plugin: setupRoutes, options: { setup: services.setup } });
  await server.register({
    plugin: deviceRoutes,
    options: {
      device: services.oauth.device,
      people: services.people,
      production,
      guards,
      trustedProxies: settings.server.trustedProxies,
    },
  });
  await server.register({ plugin: consoleRoutes, options: { people: services.people, production } });
}

/** The API's own documents, and the metrics (on this listener when it has a scrape token). */
async function registerObservability(server: Server, app: App, baseUrl: () => string) {
  const { settings, services, log, clock } = app;
  const observability = createObservability({
    settings: settings.observability,
    store: app.store,
    clock,
    log,
    models: settings.gateway.models,
    circuitOpen: (id) => services.gateway.health.open(id),
    version: API_VERSION,
    maxMergeDelayMs: maxMergeDelayMs(settings.ledger),
  });
  await server.register({ plugin: apiDocsRoutes, options: { baseUrl, version: API_VERSION } });
  if (observability.metrics && observability.scrapeToken !== null)
    await server.register({
      plugin: metricsRoutes,
      options: { metrics: observability.metrics, token: observability.scrapeToken },
    });
  return observability;
}

/** How often the ledger integrator runs: the shorter of its two settings. */
const integrateEvery = (ledger: App['settings']['ledger']): number =>
  Math.min(ledger.integrateEveryMs, ledger.checkpointIntervalMs);

/** The longest a ledger record waits for its index: a round, plus the lease's expiry when the integrator dies. */
const maxMergeDelayMs = (ledger: App['settings']['ledger']): number =>
  integrateEvery(ledger) + leaseTtlMs(integrateEvery(ledger));

/**
 * The ledger integrator's round: expired approvals are ended first, so their ledger records make
 * the same checkpoint; then, while this process holds the integrator lease (one per store, moved
 * to another process when its holder dies), waiting records are integrated and checkpointed.
 */
function integrator(services: App['services'], log: Logger, everyMs: number): () => Promise<unknown> {
  const holder = `${hostname()}:${process.pid}:${randomUUID()}`;
  return () =>
    services.approvals
      .expireDue()
      .catch((err: unknown) => log.error({ err }, 'approval expiry failed'))
      .then(() => services.ledger.integrate(holder, everyMs))
      .catch((err: unknown) => log.error({ err }, 'ledger integration failed'));
}

export async function createHttpServer(app: App, listen: ListenOptions = {}): Promise<HttpServer> {
  const { settings, services, log, clock } = app;
  const production = settings.env === 'production';
  const listener = nodeListener(settings, listen);
  const server = hapiServer(settings, listener, listen);
  const baseUrl = () => settings.baseUrl ?? server.info.uri;

  const health = { store: app.store, isDraining: () => drain.draining() };
  installFrontDoor(listener, {
    production,
    health: (path) => healthAnswer(health, path),
    answered: (entry, req) =>
      logRequest(log, {
        ...entry,
        client: clientAddressOf(
          req.socket.remoteAddress,
          req.headers['x-forwarded-for'],
          settings.server.trustedProxies,
        ),
      }),
    bodies: createBodyLimits({ server, baseUrl, production, log }),
  });
  answerClientErrors(listener, { baseUrl, production });
  // After the front door, so that its answers (health) are marked during a drain too.
  const drain = trackDrain(listener);
  await server.register({
    plugin: pipeline,
    options: {
      baseUrl,
      production,
      log,
      retryAfterSeconds: settings.load.retryAfterSeconds,
      trustedProxies: settings.server.trustedProxies,
    },
  });
  const guards = createGuards({
    clock,
    baseUrl,
    baseUrlConfigured: settings.baseUrl !== null,
    trustedProxies: settings.server.trustedProxies,
    rateLimits: settings.rateLimits,
    counters: app.store.counters,
  });
  const refusals = await registerAuth(server, app, production, baseUrl);

  const routes: RouteContext = { app, production, guards, refusals, baseUrl };
  await server.register({ plugin: systemRoutes, options: { ...health, baseUrl } });
  await registerCoreRoutes(server, routes);
  await registerGatewayRoutes(server, routes);
  await registerIntegrationRoutes(server, routes);
  await registerSignInRoutes(server, routes);
  const observability = await registerObservability(server, app, baseUrl);

  app.publicUrl.set(baseUrl);
  // The ledger integrator: every interval while this process holds the lease; on shutdown, what
  // waits is integrated and checkpointed whoever holds it.
  let checkpoints: NodeJS.Timeout | undefined;
  const integrateEveryMs = integrateEvery(settings.ledger);
  const integrate = integrator(services, log, integrateEveryMs);
  let integrating: Promise<unknown> | null = null;
  const round = () => (integrating ??= integrate().finally(() => (integrating = null)));
  // Each new checkpoint to the configured witnesses, on its own timer (ledger/witness.ts).
  const witnesses = createLedgerWitnesses({
    store: app.store,
    clock,
    log,
    witnesses: settings.ledger.witnesses,
    everyMs: settings.ledger.checkpointIntervalMs,
  });

  return {
    server,
    baseUrl,
    metricsUrl: () => observability.metricsUrl(),
    async start() {
      await observability.start();
      await services.signingKeys.ensure();
      await server.start();
      checkpoints = setInterval(() => void round(), integrateEveryMs);
      checkpoints.unref();
      witnesses.start();
      services.webhooks.start();
      services.githubCallbacks.start();
      services.sweeper.start();
    },
    async stop() {
      await drain.drain(settings.server.shutdownTimeoutMs);
      await server.stop({ timeout: settings.server.shutdownTimeoutMs });
      await services.webhooks.stop();
      await services.githubCallbacks.stop();
      await services.sweeper.stop();
      clearInterval(checkpoints);
      await witnesses.stop();
      await integrating;
      await services.approvals.expireDue().catch((err: unknown) => log.error({ err }, 'approval expiry failed'));
      await services.ledger.checkpointAll().catch((err: unknown) => log.error({ err }, 'ledger checkpoint failed'));
      await observability.stop();
    },
  };
}
