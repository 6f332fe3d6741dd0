import Joi from 'joi';
import type { Plugin, RouteOptions, ServerRoute } from '@hapi/hapi';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { Guards } from '../http/guards.js';
import { wid } from '../http/params.js';
import type { CardProvider, IntegrationKind } from './records.js';
import type { Cards } from './cards.js';
import { integrationUrl, slackTeamId, ssfTrust } from './schemas.js';
import { hookOptions, parseVerified, type Refusals } from '../http/inbound.js';
import type { ConfigureInput, IntegrationRegistry } from './registry.js';
import { INTEGRATION_KINDS } from './kinds.js';
import type { Integrations, IssuerEvent } from './service.js';
import { KIND_PERMISSION } from './kind-permissions.js';

/**
 * Integration routes (docs/integrations.md).
 * - Console (owners and admins): `GET /api/w/{wid}/integrations` (settings, secrets' dates, and
 *   refusals counted since start); `PUT …/integrations/{kind}` with the kind's body (SETTINGS);
 *   `PUT …/integrations/ssf` (the identity provider) is owners' only;
 *   the generated secrets of `issuer`, `github` and `chat-relay` are answered once.
 * - The generic card issuer: `PUT /api/w/{wid}/issuer/cards/{cardId} { agentId | null }` maps a
 *   card; `GET …/issuer/cards` and `GET …/issuer/cards/{cardId}/charges` show mappings and
 *   imported charges; its deliveries arrive at `POST /v1/hooks/issuer/{wid}`, verified by the
 *   `svc-signature` strategy before anything parses them.
 * - `cardRoutes(provider)`: the same card routes for every card provider (Stripe's are mounted by
 *   stripe/http.ts), over the shared card service (cards.ts).
 */
export const CARD_ID = Joi.string()
  .pattern(/^[A-Za-z0-9_-]{1,64}$/)
  .required();
/** The body of `PUT /api/w/{wid}/integrations/{kind}`, per kind. */
export const SETTINGS: Record<IntegrationKind, Joi.ObjectSchema> = {
  issuer: Joi.object({ rotate: Joi.boolean(), revokePrevious: Joi.boolean() }),
  acp: Joi.object({ rotate: Joi.boolean(), revokePrevious: Joi.boolean() }),
  github: Joi.object({
    rotate: Joi.boolean(),
    revokePrevious: Joi.boolean(),
    // Where deployment decisions are reported (GitHub Enterprise Server: https://host/api/v3).
    apiUrl: integrationUrl,
    // A GitHub App installation token or a PAT that may review deployments; sealed, never answered.
    token: Joi.string().min(1).max(1024).pattern(/^\S+$/).allow(null),
  }),
  'chat-relay': Joi.object({ rotate: Joi.boolean(), revokePrevious: Joi.boolean(), url: integrationUrl }),
  stripe: Joi.object({ signingSecret: Joi.string().min(8).max(256).pattern(/^\S+$/), revokePrevious: Joi.boolean() }),
  slack: Joi.object({
    signingSecret: Joi.string().min(8).max(256).pattern(/^\S+$/),
    revokePrevious: Joi.boolean(),
    teamId: slackTeamId,
  }),
  // Public keys only: a private or symmetric member (d, p, q, dp, dq, qi, oth, k) is refused, never stored.
  ssf: Joi.object(ssfTrust)
    .xor('jwksUri', 'jwks')
    // Settings merge with what was set before: naming one source of keys clears the other.
    .custom((value: Record<string, unknown>) => ({ jwksUri: null, jwks: null, ...value })),
};

const issuerEventSchema = Joi.object({
  id: Joi.string()
    .pattern(/^[A-Za-z0-9_-]{1,128}$/)
    .required(),
  type: Joi.string().valid('authorization.request', 'charge.posted', 'charge.refunded').required(),
  cardId: CARD_ID,
  amount: Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER).required(),
  currency: Joi.string()
    .pattern(/^[A-Z]{3}$/)
    .required(),
  merchant: Joi.object({
    name: Joi.string().min(1).max(200).required(),
    domain: Joi.string().hostname().max(253).allow(null),
    mcc: Joi.string()
      .pattern(/^\d{4}$/)
      .allow(null),
  }).required(),
  createdAt: Joi.string().isoDate().required(),
}).unknown(true);

/**
 * The console's card routes of one provider, the same for every provider, owners and
 * admins only: `GET /api/w/{wid}/{provider}/cards`, `PUT …/{provider}/cards/{cardId}
 * { agentId | null }` → `{ cardId, agentId }` (the card's imported charges are reconciled again),
 * and `GET …/{provider}/cards/{cardId}/charges`.
 */
export function cardRoutes(
  provider: CardProvider,
  deps: { cards: Cards; session: RouteOptions['auth']; write: RouteOptions['ext'] },
): ServerRoute[] {
  const { cards, session, write } = deps;
  const managed = { auth: session, app: { permission: 'integrations.manage' } } as const;
  return [
    {
      method: 'GET',
      path: `/api/w/{wid}/${provider}/cards`,
      options: { ...managed, validate: { params: Joi.object({ wid }) } },
      async handler(request) {
        return { data: await cards.cards(member(request).wid, provider), next: null };
      },
    },
    {
      method: 'PUT',
      path: `/api/w/{wid}/${provider}/cards/{cardId}`,
      options: {
        ...managed,
        ext: write,
        validate: {
          params: Joi.object({ wid, cardId: CARD_ID }),
          payload: Joi.object({ agentId: Joi.string().max(64).allow(null).required() }),
        },
      },
      handler(request) {
        const { wid: w, actor } = member(request);
        const { cardId } = request.params as { cardId: string };
        return cards.mapCard(w, provider, cardId, (request.payload as { agentId: string | null }).agentId, actor);
      },
    },
    {
      method: 'GET',
      path: `/api/w/{wid}/${provider}/cards/{cardId}/charges`,
      options: { ...managed, validate: { params: Joi.object({ wid, cardId: CARD_ID }) } },
      async handler(request) {
        const { wid: w } = member(request);
        return { data: await cards.charges(w, provider, (request.params as { cardId: string }).cardId), next: null };
      },
    },
  ];
}

/** Splits a settings body into what the registry takes: rotation, a provider's secret, and the rest. */
function configureInput(body: Record<string, unknown>): ConfigureInput {
  const { rotate, revokePrevious, signingSecret, token, ...config } = body;
  return {
    ...(rotate === true ? { rotate: true } : {}),
    ...(revokePrevious === true ? { revokePrevious: true } : {}),
    ...(typeof signingSecret === 'string' ? { signingSecret } : {}),
    // github's API token: a secret setting, sealed apart from the plain ones.
    ...(token !== undefined ? { configSecrets: { token: token as string | null } } : {}),
    ...(Object.keys(config).length > 0 ? { config } : {}),
  };
}

export const integrationsRoutes: Plugin<{
  integrations: Integrations;
  cards: Cards;
  registry: IntegrationRegistry;
  refusals: Refusals;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-integrations',
  register(server, { integrations, cards, registry, refusals, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const write = { onPreAuth: guards.consoleWrite };

    server.route([
      {
        method: 'GET',
        path: '/api/w/{wid}/integrations',
        options: {
          auth: session,
          app: { permission: 'integrations.manage' },
          validate: { params: Joi.object({ wid }) },
        },
        async handler(request) {
          const { wid: w } = member(request);
          const views = await registry.view(w);
          const refused = await Promise.all(views.map((v) => refusals.get(w, v.kind)));
          return { data: views.map((v, i) => ({ ...v, refused: refused[i] })), next: null };
        },
      },
      {
        method: 'PUT',
        path: '/api/w/{wid}/integrations/{kind}',
        options: {
          auth: session,
          // The identity provider and the approval channels are owners' alone (their secrets speak for people).
          app: { permission: { byParam: 'kind', of: KIND_PERMISSION, otherwise: 'integrations.manage' } },
          ext: write,
          validate: {
            params: Joi.object({
              wid,
              kind: Joi.string()
                .valid(...INTEGRATION_KINDS)
                .required(),
            }),
            async payload(value: unknown, options) {
              const kind = (options as { context?: { params?: { kind?: string } } }).context?.params?.kind as
                IntegrationKind | undefined;
              const schema = kind && SETTINGS[kind] ? SETTINGS[kind] : Joi.object();
              return schema.validateAsync(value ?? {}, { abortEarly: false });
            },
          },
        },
        handler(request) {
          const { kind } = request.params as { kind: IntegrationKind };
          const { wid: w, actor } = member(request);
          return registry.configure(w, kind, configureInput((request.payload ?? {}) as Record<string, unknown>), actor);
        },
      },
      ...cardRoutes('issuer', { cards, session, write }),
      {
        method: 'POST',
        path: '/v1/hooks/issuer/{wid}',
        options: hookOptions('issuer', refusals, { validate: { params: Joi.object({ wid }) } }),
        async handler(request, h) {
          const { wid: w } = request.params as { wid: string };
          return integrations.handle(w, parseVerified<IssuerEvent>(request, h, issuerEventSchema));
        },
      },
    ]);
  },
};
