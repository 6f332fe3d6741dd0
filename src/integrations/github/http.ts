import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { member } from '../../http/auth/permission.js';
import { sessionStrategies } from '../../http/auth/session.js';
import { verified } from '../../http/auth/signature.js';
import type { Guards } from '../../http/guards.js';
import { wid } from '../../http/params.js';
import { hookOptions, parseVerified, type Refusals } from '../../http/inbound.js';
import type { Github, GithubEvent } from './service.js';
import type { GithubDelivery } from './verifier.js';

/**
 * The code host's routes (docs/integrations.md#code-host-github):
 * - `PUT /api/w/{wid}/github/bots/{login}` `{ agentId | null }` maps a GitHub account to an agent
 *   (owners and admins); `GET /api/w/{wid}/github/bots` lists the mappings.
 * - `POST /v1/hooks/github/{wid}`: GitHub's deliveries, verified by the `github` strategy over the
 *   raw bytes before anything parses them; the body is then validated for the events acted on,
 *   and must fit the event its (unsigned) X-GitHub-Event header names, else 400.
 */
export const LOGIN = Joi.string()
  .pattern(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$/)
  .required()
  .messages({ 'string.pattern.base': '{{#label}} must be a GitHub login, such as deploy-bot or my-app[bot]' });

const sender = Joi.object({ login: Joi.string().max(100).required() })
  .unknown(true)
  .required();
const repository = Joi.object({
  full_name: Joi.string()
    .pattern(/^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/)
    .required(),
  html_url: Joi.string()
    .uri({ scheme: ['https', 'http'] })
    .max(2048),
}).unknown(true);

const sha = Joi.string().pattern(/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/);
const callbackUrl = Joi.string()
  .uri({ scheme: ['https', 'http'] })
  .max(2048);

/**
 * What the route checks of a body, per event: the fields acted on, and the ones that tell the
 * events apart (the X-GitHub-Event header is not signed, so a body relabelled as another event
 * must not fit it); the rest passes through.
 */
const schemaOf = (event: string): Joi.Schema => {
  switch (event) {
    case 'deployment_protection_rule':
      return Joi.object({
        action: Joi.string().max(64).required(),
        sender,
        repository: repository.when('action', { is: 'requested', then: Joi.required() }),
        environment: Joi.string().min(1).max(255).when('action', { is: 'requested', then: Joi.required() }),
        deployment_callback_url: callbackUrl.when('action', { is: 'requested', then: Joi.required() }),
        pull_request: Joi.forbidden(),
        deployment_status: Joi.forbidden(),
      }).unknown(true);
    case 'push':
      return Joi.object({
        sender,
        repository: repository.required(),
        ref: Joi.string().min(1).max(1024).required(),
        after: sha.required(),
        before: sha,
        pull_request: Joi.forbidden(),
        deployment: Joi.forbidden(),
        deployment_callback_url: Joi.forbidden(),
      }).unknown(true);
    case 'pull_request':
      return Joi.object({
        sender,
        repository: repository.required(),
        action: Joi.string().max(64).required(),
        number: Joi.number().integer().min(1).required(),
        pull_request: Joi.object({
          head: Joi.object().unknown(true).required(),
          base: Joi.object().unknown(true).required(),
        })
          .unknown(true)
          .required(),
        deployment: Joi.forbidden(),
        deployment_callback_url: Joi.forbidden(),
      }).unknown(true);
    case 'deployment':
      return Joi.object({
        sender,
        repository: repository.required(),
        deployment: Joi.object({ id: Joi.number().integer().required(), environment: Joi.string().max(255).required() })
          .unknown(true)
          .required(),
        deployment_status: Joi.forbidden(),
        deployment_callback_url: Joi.forbidden(),
        pull_request: Joi.forbidden(),
      }).unknown(true);
    case 'deployment_status':
      return Joi.object({
        sender,
        repository: repository.required(),
        deployment_status: Joi.object({ state: Joi.string().max(64).required() })
          .unknown(true)
          .required(),
        deployment: Joi.object({ id: Joi.number().integer().required() }).unknown(true).required(),
        deployment_callback_url: Joi.forbidden(),
        pull_request: Joi.forbidden(),
      }).unknown(true);
    default:
      return Joi.object().unknown(true);
  }
};

export const githubRoutes: Plugin<{
  github: Github;
  refusals: Refusals;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-github',
  register(server, { github, refusals, production, guards }) {
    const managed = {
      auth: { strategies: sessionStrategies(production) },
      app: { permission: 'integrations.manage' },
    } as const;

    server.route([
      {
        method: 'GET',
        path: '/api/w/{wid}/github/bots',
        options: { ...managed, validate: { params: Joi.object({ wid }) } },
        async handler(request) {
          return { data: await github.bots(member(request).wid), next: null };
        },
      },
      {
        method: 'PUT',
        path: '/api/w/{wid}/github/bots/{login}',
        options: {
          ...managed,
          ext: { onPreAuth: guards.consoleWrite },
          validate: {
            params: Joi.object({ wid, login: LOGIN }),
            payload: Joi.object({ agentId: Joi.string().max(64).allow(null).required() }),
          },
        },
        handler(request) {
          const { wid: w, actor } = member(request);
          const { login } = request.params as { login: string };
          return github.mapBot(w, login, (request.payload as { agentId: string | null }).agentId, actor);
        },
      },
      {
        method: 'POST',
        path: '/v1/hooks/github/{wid}',
        options: hookOptions('github', refusals, { validate: { params: Joi.object({ wid }) } }),
        async handler(request, h) {
          const { workspaceId, event, delivery, bodyHash } = verified<GithubDelivery>(request);
          return github.handle(
            workspaceId,
            { id: delivery, bodyHash },
            event,
            parseVerified<GithubEvent>(request, h, schemaOf(event)),
          );
        },
      },
    ]);
  },
};
