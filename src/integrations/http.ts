import Joi from 'joi';
import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import { SIGNATURE } from '../http/auth/callers.js';
import { permittedMember, sessionStrategies } from '../http/auth/session.js';
import { validationFailAction } from '../http/errors.js';
import type { Guards } from '../http/guards.js';
import { wid } from '../http/params.js';
import type { PeopleService } from '../people/index.js';
import type { Integrations, IssuerEvent } from './service.js';

/**
 * Integration routes (API.md 8), the generic card issuer so far.
 * - Console (owners and admins): `GET /api/w/{wid}/integrations`; `PUT …/integrations/issuer`
 *   (`{}` the first time, `{ "rotate": true }` after) answers the secret once;
 *   `PUT /api/w/{wid}/issuer/cards/{cardId} { agentId | null }` maps a card; `GET …/issuer/cards`
 *   and `GET …/issuer/cards/{cardId}/charges` show mappings and imported charges.
 * - `POST /v1/hooks/issuer/{wid}`: no bearer; the `svc-signature` strategy checks the header and
 *   its timestamp before the body is read and the HMAC over the raw bytes before anything parses
 *   them. Refusals are counted per workspace (shown in `GET …/integrations`); nothing of a
 *   refused body is logged.
 */
const CARD_ID = Joi.string().pattern(/^[A-Za-z0-9_-]{1,64}$/).required();

const issuerEventSchema = Joi.object({
  id: Joi.string().pattern(/^[A-Za-z0-9_-]{1,128}$/).required(),
  type: Joi.string().valid('authorization.request', 'charge.posted', 'charge.refunded').required(),
  cardId: CARD_ID,
  amount: Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER).required(),
  currency: Joi.string().pattern(/^[A-Z]{3}$/).required(),
  merchant: Joi.object({
    name: Joi.string().min(1).max(200).required(),
    domain: Joi.string().hostname().max(253).allow(null),
    mcc: Joi.string().pattern(/^\d{4}$/).allow(null),
  }).required(),
  createdAt: Joi.string().isoDate().required(),
}).unknown(true);

export const ISSUER_HOOK_PATH = '/v1/hooks/issuer/{wid}';
const WID = /^ws_[0-9A-Za-z]{22}$/;

/** The secrets a hook request may be signed with, by its route and workspace (none for a malformed workspace id). */
export function hookSecrets(integrations: Integrations) {
  return (request: Request): string[] => {
    const w = String(request.params.wid ?? '');
    if (request.route.path !== ISSUER_HOOK_PATH || !WID.test(w)) return [];
    return integrations.secretsFor(w, 'issuer');
  };
}

export const integrationsRoutes: Plugin<{ integrations: Integrations; people: PeopleService; production: boolean; guards: Guards }> = {
  name: 'svc-integrations',
  register(server, { integrations, people, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const write = { onPreAuth: guards.consoleWrite };
    const refused = new Map<string, number>();

    /** Counts the hook route's refusals by workspace (a route extension: no other request pays for it). */
    const countRefusal = (request: Request, h: ResponseToolkit) => {
      const response = request.response as { statusCode?: number; output?: { statusCode: number } } | null;
      const status = response?.output?.statusCode ?? response?.statusCode ?? 0;
      const w = String(request.params.wid);
      if (status >= 400 && WID.test(w)) refused.set(`${w}/issuer`, (refused.get(`${w}/issuer`) ?? 0) + 1);
      return h.continue;
    };

    const managed = (request: Request) => permittedMember(people, request, 'integrations.manage');

    server.route([
      {
        method: 'GET', path: '/api/w/{wid}/integrations',
        options: { auth: session, validate: { params: Joi.object({ wid }) } },
        handler(request) {
          const { wid: w } = managed(request);
          return { data: integrations.view(w).map((v) => ({ ...v, refused: refused.get(`${w}/${v.kind}`) ?? 0 })), next: null };
        },
      },
      {
        method: 'PUT', path: '/api/w/{wid}/integrations/{kind}',
        options: {
          auth: session, ext: write,
          validate: {
            params: Joi.object({ wid, kind: Joi.string().valid('issuer').required().messages({ 'any.only': '{{#label}} must be issuer (the other integrations of API.md 8 are not built yet)' }) }),
            payload: Joi.object({ rotate: Joi.boolean() }).allow(null),
          },
        },
        async handler(request) {
          const { wid: w, actor } = managed(request);
          const body = (request.payload ?? {}) as { rotate?: boolean };
          return integrations.configure(w, 'issuer', body, actor);
        },
      },
      {
        method: 'GET', path: '/api/w/{wid}/issuer/cards',
        options: { auth: session, validate: { params: Joi.object({ wid }) } },
        handler(request) {
          const { wid: w } = managed(request);
          return { data: integrations.cards(w), next: null };
        },
      },
      {
        method: 'PUT', path: '/api/w/{wid}/issuer/cards/{cardId}',
        options: { auth: session, ext: write, validate: { params: Joi.object({ wid, cardId: CARD_ID }), payload: Joi.object({ agentId: Joi.string().max(64).allow(null).required() }) } },
        async handler(request) {
          const { wid: w, actor } = managed(request);
          const { cardId } = request.params as { cardId: string };
          return integrations.mapCard(w, cardId, (request.payload as { agentId: string | null }).agentId, actor);
        },
      },
      {
        method: 'GET', path: '/api/w/{wid}/issuer/cards/{cardId}/charges',
        options: { auth: session, validate: { params: Joi.object({ wid, cardId: CARD_ID }) } },
        handler(request) {
          const { wid: w } = managed(request);
          return { data: integrations.charges(w, (request.params as { cardId: string }).cardId), next: null };
        },
      },
      {
        method: 'POST', path: ISSUER_HOOK_PATH,
        options: {
          auth: { strategy: SIGNATURE, payload: 'required' },
          ext: { onPreResponse: { method: countRefusal } },
          payload: { parse: false, output: 'data', maxBytes: 1_048_576 },
          validate: { params: Joi.object({ wid }) },
        },
        async handler(request, h) {
          const { wid: w } = request.params as { wid: string };
          // Parsed only now that the signature over these bytes has verified.
          let body: unknown;
          try {
            body = JSON.parse((request.payload as Buffer).toString('utf8'));
          } catch {
            throw new AppError('invalid_json');
          }
          const { error, value } = issuerEventSchema.validate(body, { abortEarly: false });
          if (error) validationFailAction(request, h, error);
          return integrations.handle(w, value as IssuerEvent);
        },
      },
    ]);
  },
};
