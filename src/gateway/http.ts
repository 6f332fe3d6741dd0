import Joi from 'joi';
import type { Plugin, Request, ResponseToolkit, ServerRoute } from '@hapi/hapi';
import { actorOf, caller, WORKSPACE_KEY } from '../http/auth/callers.js';
import { requestStamp } from '../http/pipeline.js';
import { arrivedAt } from '../http/front-door.js';
import type { Guards } from '../http/guards.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { GatewayModel, GatewaySettings } from '../settings/schema.js';
import type { KeyRecord } from '../keys/records.js';
import type { Budgets } from './budgets.js';
import type { CallLog } from './calls.js';
import type { RouteShape } from './steps/context.js';
import { countTokensSchema } from './count-tokens.js';
import { embeddingsSchema } from './embeddings.js';
import { responsesSchema } from './responses/schema.js';
import { budgetSchema, chatCompletionsSchema, messagesSchema, type BudgetInput } from './schemas.js';
import { gatewayConsoleRoutes } from './console/http.js';
import { profileBlockers } from './routing.js';
import { cachePrices } from './steps/prices.js';
import type { Gateway } from './service.js';
import { usageReport } from './usage.js';
import type { ErrorType } from '../errors/catalogue.js';
import { AppError } from '../errors/app-error.js';

/**
 * The longest array a model request may hold: every array the model routes' schemas read is at
 * most 10,000 items (messages, input items, content parts), and an embeddings request's token
 * arrays at most 100,000. An over-long one is refused before validation, which would otherwise
 * walk every item first (300,000 messages held the event loop for seconds).
 */
const MODEL_ARRAY_ITEMS = 10_000;
const EMBEDDING_ARRAY_ITEMS = 100_000;
/**
 * What every model route declares: any key of the workspace, bodies as large as a long
 * conversation (bounded before validation), forwarded as they came (their keys kept).
 */
const MODEL_ROUTE = {
  keyScope: 'any',
  maxBodyMembers: 1_000_000,
  maxArrayItems: MODEL_ARRAY_ITEMS,
  forwarded: true,
} as const;

// What the gateway's steps can refuse a model request with (listed in GET /openapi.json).
const MODEL_ERRORS: ErrorType[] = [
  'agent_stopped',
  'unclassified_request',
  'policy_conflict',
  'sensitive_data_blocked',
  'budget_exhausted',
  'approval_required',
  'rate_limited',
  'plan_limit_reached',
  'seat_limit_reached',
  'upstream_failure',
  'upstream_rate_limited',
];
// Token counting is no model call: no plan, budget or admission refuses it.
const COUNT_ERRORS: ErrorType[] = [
  'agent_stopped',
  'unclassified_request',
  'policy_conflict',
  'sensitive_data_blocked',
];

/** What the gateway's route groups are given. */
interface GatewayRouteDeps {
  gateway: Gateway;
  budgets: Budgets;
  calls: CallLog;
  settings: GatewaySettings;
}

/** The catalogue as GET /v1/models shows it, and the models a key may reach (its policy profile's). */
function catalogue(settings: GatewaySettings) {
  const created = Math.floor(Date.now() / 1000);
  const modelView = (m: GatewayModel) => ({
    id: m.id,
    object: 'model',
    created,
    owned_by: m.provider,
    provider: m.provider,
    jurisdiction: m.jurisdiction,
    priceMicrosPerMTokIn: m.priceMicrosPerMTokIn,
    priceMicrosPerMTokOut: m.priceMicrosPerMTokOut,
    // The prompt cache's prices as charged (set, or their defaults: steps/prices.ts).
    priceMicrosPerMTokCacheRead: cachePrices(m).read,
    priceMicrosPerMTokCacheWrite: cachePrices(m).write,
    priceMicrosPerMTokCacheWrite1h: cachePrices(m).write1h,
    taskClasses: m.taskClasses,
    quality: m.quality,
    latency: m.latency,
  });
  const profiles = new Map(settings.policyProfiles.map((p) => [p.id, p]));
  /** The catalogue a key may reach: its policy profile's models, providers and jurisdictions. */
  const reachable = (key: KeyRecord) => {
    if (!key.policyProfile) return settings.models;
    const p = profiles.get(key.policyProfile);
    if (!p) return [];
    return settings.models.filter((m) => profileBlockers(m, p, settings.home).length === 0);
  };
  return { modelView, reachable };
}

/** A model route's handler: the request handed to the gateway, its answer (JSON or a stream) with its headers. */
function modelHandler(gateway: Gateway) {
  return (shape: RouteShape) => async (request: Request, h: ResponseToolkit) => {
    // From the moment the listener saw the request (parsing and authentication included).
    const startedAt = arrivedAt(request.raw.req) ?? performance.now() - (Date.now() - request.info.received);
    const abort = new AbortController();
    // The client went away before its answer was written: cancel the upstream call.
    request.raw.res.once('close', () => {
      if (!request.raw.res.writableFinished) abort.abort();
    });
    // Headers every answer carries, refusals included (the pipeline sets them on errors too).
    const headers = (request.app.responseHeaders ??= {});
    let answer;
    try {
      answer = await gateway.handle({
        shape,
        body: request.payload as Record<string, unknown>,
        key: caller(request, 'workspace-key').key,
        headers: request.headers as Record<string, string | string[] | undefined>,
        traceparent: requestStamp(request).traceparent,
        signal: abort.signal,
        startedAt,
        answerHeaders: headers,
      });
    } catch (err) {
      headers['x-svc-overhead-micros'] ??= String(Math.round((performance.now() - startedAt) * 1000));
      throw err;
    }
    const response = answer.stream
      ? h
          .response(answer.stream)
          .type('text/event-stream; charset=utf-8')
          .header('cache-control', 'no-cache')
          .header('content-encoding', 'identity')
      : h.response(answer.json).code(answer.status);
    for (const [name, value] of Object.entries(answer.headers)) response.header(name, value);
    return response;
  };
}

/** The model routes (any workspace key, or an agent key for its agent's own traffic) and the catalogue. */
function modelRoutes(deps: GatewayRouteDeps): ServerRoute[] {
  const { gateway, settings } = deps;
  const { modelView, reachable } = catalogue(settings);
  const model = modelHandler(gateway);
  const modelRoute = { auth: WORKSPACE_KEY, payload: { maxBytes: settings.bodyBytes } };
  return [
    {
      method: 'POST',
      path: '/v1/chat/completions',
      options: {
        ...modelRoute,
        plugins: { svc: { ...MODEL_ROUTE, errors: MODEL_ERRORS } },
        validate: { payload: chatCompletionsSchema },
      },
      handler: model('openai'),
    },
    {
      method: 'POST',
      path: '/v1/messages',
      options: {
        ...modelRoute,
        plugins: { svc: { ...MODEL_ROUTE, errorEnvelope: 'anthropic', errors: MODEL_ERRORS } },
        validate: { payload: messagesSchema },
      },
      handler: model('anthropic'),
    },
    {
      method: 'POST',
      path: '/v1/responses',
      options: {
        ...modelRoute,
        plugins: { svc: { ...MODEL_ROUTE, errors: MODEL_ERRORS } },
        validate: { payload: responsesSchema },
      },
      handler: model('responses'),
    },
    {
      method: 'POST',
      path: '/v1/embeddings',
      options: {
        ...modelRoute,
        plugins: { svc: { ...MODEL_ROUTE, maxArrayItems: EMBEDDING_ARRAY_ITEMS, errors: MODEL_ERRORS } },
        validate: { payload: embeddingsSchema },
      },
      handler: model('embeddings'),
    },
    {
      // Claude Code adds ?beta=true.
      method: 'POST',
      path: '/v1/messages/count_tokens',
      options: {
        ...modelRoute,
        plugins: { svc: { ...MODEL_ROUTE, errorEnvelope: 'anthropic', errors: COUNT_ERRORS } },
        validate: { payload: countTokensSchema, query: Joi.object({ beta: Joi.string().valid('true', 'false') }) },
      },
      handler: model('count_tokens'),
    },
    {
      method: 'GET',
      path: '/v1/models',
      options: { auth: WORKSPACE_KEY, plugins: { svc: { keyScope: 'any' } } },
      handler: (request) => ({
        object: 'list',
        data: reachable(caller(request, 'workspace-key').key).map(modelView),
      }),
    },
    {
      // One model of that catalogue (OpenAI's retrieve). Catalogue ids may hold `/` and `:`: the
      // id spans the rest of the path, sent as is or percent-encoded (the SDKs encode `/`).
      method: 'GET',
      path: '/v1/models/{id*}',
      options: {
        auth: WORKSPACE_KEY,
        plugins: { svc: { keyScope: 'any', errors: ['not_found'] } },
        validate: { params: Joi.object({ id: Joi.string().allow('') }) },
      },
      handler(request) {
        const { id } = request.params as { id: string };
        const found = reachable(caller(request, 'workspace-key').key).find((m) => m.id === id);
        if (!found)
          throw new AppError('not_found', {
            message: `Model "${id.length > 200 ? `${id.slice(0, 200)}…` : id}" is not in the catalogue this key may reach.`,
            fix: 'Name a model that GET /v1/models lists for this key.',
          });
        return modelView(found);
      },
    },
  ];
}

/** For admin keys: budgets, usage, and the upstreams' status. */
function adminRoutes(deps: GatewayRouteDeps): ServerRoute[] {
  const { gateway, budgets, calls, settings } = deps;
  return [
    {
      method: 'POST',
      path: '/v1/admin/budgets',
      options: {
        auth: WORKSPACE_KEY,
        plugins: { svc: { keyScope: 'admin', validationType: 'invalid_budget' } },
        validate: { payload: budgetSchema },
      },
      async handler(request, h) {
        const c = caller(request, 'workspace-key');
        return h.response(await budgets.create(c.workspaceId, request.payload as BudgetInput, actorOf(c))).code(201);
      },
    },
    {
      method: 'GET',
      path: '/v1/admin/budgets',
      options: { auth: WORKSPACE_KEY, plugins: { svc: { keyScope: 'admin' } } },
      handler: async (request) => ({
        data: await budgets.list(caller(request, 'workspace-key').workspaceId),
        next: null,
      }),
    },
    {
      method: 'GET',
      path: '/v1/admin/usage',
      options: {
        auth: WORKSPACE_KEY,
        plugins: { svc: { keyScope: 'admin' } },
        validate: {
          query: Joi.object({
            from: Joi.date().iso(),
            to: Joi.date().iso(),
            by: Joi.string().valid('model', 'principal', 'team', 'agent', 'key', 'taskClass').default('model'),
          }),
        },
      },
      async handler(request) {
        await calls.flush();
        const q = request.query as {
          from?: Date;
          to?: Date;
          by: 'model' | 'principal' | 'team' | 'agent' | 'key' | 'taskClass';
        };
        return usageReport(calls, caller(request, 'workspace-key').workspaceId, q);
      },
    },
    {
      method: 'GET',
      path: '/v1/admin/upstreams',
      options: { auth: WORKSPACE_KEY, plugins: { svc: { keyScope: 'admin' } } },
      handler: (request) => ({
        data: settings.models.map((m) => ({
          model: m.id,
          provider: m.provider,
          circuit: gateway.health.open(m.id) ? 'open' : 'closed',
          observedLatencyMs: gateway.health.latencyMs(m.id) ?? null,
          // Each deployment's own circuit and latency (the model's circuit is open when all are).
          deployments: gateway.health.deployments(m),
        })),
        // What the bounded record queues dropped of this workspace's records (docs/gateway.md).
        recordQueues: gateway.queues(caller(request, 'workspace-key').workspaceId),
      }),
    },
  ];
}

/**
 * The model gateway's routes (docs/gateway.md): POST /v1/chat/completions, /v1/responses and
 * /v1/embeddings (OpenAI shapes), POST /v1/messages and /v1/messages/count_tokens (Anthropic shape;
 * errors in its `{ type: "error", error }` envelope), GET /v1/models and /v1/models/{id}; and for admin keys budgets, usage and upstream status. Any workspace key, or an
 * agent key for its agent's own traffic. The console's routes are in console/http.ts.
 */
export const gatewayRoutes: Plugin<GatewayRouteDeps & { production: boolean; guards: Guards }> = {
  name: 'svc-gateway',
  register(server, deps) {
    const session = { strategies: sessionStrategies(deps.production) };
    server.route([...modelRoutes(deps), ...gatewayConsoleRoutes({ ...deps, session }), ...adminRoutes(deps)]);
  },
};
