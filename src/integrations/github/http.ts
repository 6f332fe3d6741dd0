import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import { permittedMember, sessionStrategies } from '../../http/auth/session.js';
import { verified } from '../../http/auth/signature.js';
import type { Guards } from '../../http/guards.js';
import { wid } from '../../http/params.js';
import type { PeopleService } from '../../people/index.js';
import { hookOptions, parseVerified, type Refusals } from '../../http/inbound.js';
import { RECORDED, type Github, type GithubEvent } from './service.js';
import type { GithubDelivery } from './verifier.js';

/**
 * The code host's routes (API.md 8):
 * - `PUT /api/w/{wid}/github/bots/{login}` `{ agentId | null }` maps a GitHub account to an agent
 *   (owners and admins); `GET /api/w/{wid}/github/bots` lists the mappings.
 * - `POST /v1/hooks/github/{wid}`: GitHub's deliveries, verified by the `github` strategy over the
 *   raw bytes before anything parses them; the body is then validated for the events acted on.
 */
export const LOGIN = Joi.string().pattern(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$/).required()
  .messages({ 'string.pattern.base': '{{#label}} must be a GitHub login, such as deploy-bot or my-app[bot]' });

const sender = Joi.object({ login: Joi.string().max(100).required() }).unknown(true).required();
const repository = Joi.object({
  full_name: Joi.string().pattern(/^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/).required(),
  html_url: Joi.string().uri({ scheme: ['https', 'http'] }).max(2048),
}).unknown(true);

/** What the route checks of a body, per event: only the fields acted on; the rest passes through. */
const schemaOf = (event: string): Joi.Schema => {
  if (event === 'deployment_protection_rule') {
    return Joi.object({
      action: Joi.string().max(64).required(),
      sender,
      repository: repository.when('action', { is: 'requested', then: Joi.required() }),
      environment: Joi.string().min(1).max(255).when('action', { is: 'requested', then: Joi.required() }),
    }).unknown(true);
  }
  if ((RECORDED as readonly string[]).includes(event)) return Joi.object({ sender, repository: repository.required() }).unknown(true);
  return Joi.object().unknown(true);
};

export const githubRoutes: Plugin<{ github: Github; refusals: Refusals; people: PeopleService; production: boolean; guards: Guards }> = {
  name: 'svc-github',
  register(server, { github, refusals, people, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const managed = (request: Request) => permittedMember(people, request, 'integrations.manage');

    server.route([
      {
        method: 'GET', path: '/api/w/{wid}/github/bots',
        options: { auth: session, validate: { params: Joi.object({ wid }) } },
        handler(request) {
          const { wid: w } = managed(request);
          return { data: github.bots(w), next: null };
        },
      },
      {
        method: 'PUT', path: '/api/w/{wid}/github/bots/{login}',
        options: {
          auth: session, ext: { onPreAuth: guards.consoleWrite },
          validate: { params: Joi.object({ wid, login: LOGIN }), payload: Joi.object({ agentId: Joi.string().max(64).allow(null).required() }) },
        },
        async handler(request) {
          const { wid: w, actor } = managed(request);
          const { login } = request.params as { login: string };
          return github.mapBot(w, login, (request.payload as { agentId: string | null }).agentId, actor);
        },
      },
      {
        method: 'POST', path: '/v1/hooks/github/{wid}',
        options: hookOptions('github', refusals, { validate: { params: Joi.object({ wid }) } }),
        async handler(request, h) {
          const { workspaceId, event, delivery } = verified<GithubDelivery>(request);
          return github.handle(workspaceId, delivery, event, parseVerified<GithubEvent>(request, h, schemaOf(event)));
        },
      },
    ]);
  },
};
