import Joi from 'joi';
import type { Plugin, Request } from '@hapi/hapi';
import { answer } from '../approvals/http.js';
import { AppError } from '../errors/app-error.js';
import { verified } from '../http/auth/signature.js';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import { roleAllows } from '../people/permissions.js';
import { validationFailAction } from '../http/errors.js';
import type { Guards } from '../http/guards.js';
import { wid } from '../http/params.js';
import { hookOptions, parseVerified, verifiedJson, type Refusals } from '../http/inbound.js';
import type { Chat, ClickResult } from './service.js';
import { blockActionsSchema, formPayload, type BlockActions } from './slack.js';

/**
 * Approvals from chat (issue 8; the shapes are in docs/integrations.md#approvals-from-chat).
 * - Console (owners and admins): `GET /api/w/{wid}/chat/users`, `PUT
 *   /api/w/{wid}/chat/users/{platform}/{chatUserId} { userId: "usr_…" | null }`, and
 *   `GET /api/w/{wid}/chat/cards` (the cards sent to the relay: status and tries, never tokens).
 * - `POST /v1/hooks/chat-relay/{wid}`: the relay's click, `svc-signature` with the relay secret,
 *   each signature once; `{ token, user: { platform, id }, note? }`; answers the approval as the
 *   console does (`200 { decision, approval }`) or the console's error.
 * - `POST /v1/hooks/slack`: Slack's `block_actions` interaction, v0 signature; always `200` once
 *   the signature verified and the payload is a click, with `{ ok, text, … }` saying what happened.
 */
const SLACK_BODY_LIMIT = 256 * 1024;

export const PLATFORM = Joi.string()
  .pattern(/^[a-z][a-z0-9-]{0,31}$/)
  .required();
export const CHAT_USER_ID = Joi.string()
  .pattern(/^[A-Za-z0-9._:@=+-]{1,128}$/)
  .required();

const relayClickSchema = Joi.object({
  token: Joi.string().max(200).required(),
  user: Joi.object({ platform: PLATFORM, id: CHAT_USER_ID }).required(),
  note: Joi.string().trim().max(1000).allow('', null),
  // Not read: it makes two sends of the same click in the same second two distinct signatures.
  clickId: Joi.string().max(128),
});

interface RelayClick {
  token: string;
  user: { platform: string; id: string };
  note?: string | null;
}

const approvalOf = (result: ClickResult) => answer(result.outcome);

export const chatRoutes: Plugin<{
  chat: Chat;
  refusals: Refusals;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-chat',
  register(server, { chat, refusals, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const write = { onPreAuth: guards.consoleWrite };
    /** A person who may decide approvals (whose chat identity may then decide for them). */
    const decider = { auth: session, app: { permission: 'approvals.decide' } } as const;
    /** The person, and whether they manage integrations. */
    const person = (request: Request) => {
      const { wid: w, actor, user, role } = member(request);
      return { wid: w, actor, self: user.id, manager: roleAllows(role, 'integrations.manage') };
    };

    server.route([
      {
        method: 'GET',
        path: '/api/w/{wid}/chat/users',
        options: { ...decider, validate: { params: Joi.object({ wid }) } },
        async handler(request) {
          // Owners and admins see every mapping; others their own.
          const { wid: w, self, manager } = person(request);
          return { data: (await chat.users(w)).filter((u) => manager || u.userId === self), next: null };
        },
      },
      {
        method: 'PUT',
        path: '/api/w/{wid}/chat/users/{platform}/{chatUserId}',
        options: {
          ...decider,
          ext: write,
          validate: {
            params: Joi.object({ wid, platform: PLATFORM, chatUserId: CHAT_USER_ID }),
            payload: Joi.object({
              userId: Joi.string()
                .pattern(/^usr_[0-9A-Za-z]{22}$/)
                .allow(null)
                .required(),
            }),
          },
        },
        handler(request) {
          const { wid: w, actor, self, manager } = person(request);
          const { platform, chatUserId } = request.params as { platform: string; chatUserId: string };
          return chat.mapUser(w, platform, chatUserId, (request.payload as { userId: string | null }).userId, {
            actor,
            self,
            manager,
          });
        },
      },
      {
        // A test card to the chat relay, signed as every card (owners: the relay speaks for people).
        method: 'POST',
        path: '/api/w/{wid}/integrations/chat-relay/test',
        options: {
          auth: session,
          app: { permission: 'integrations.approvalChannels' },
          ext: write,
          validate: { params: Joi.object({ wid }) },
        },
        async handler(request, h) {
          const { wid: w, actor } = member(request);
          return h.response(await chat.sendTestCard(w, actor)).code(202);
        },
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/chat/cards',
        options: {
          auth: session,
          app: { permission: 'integrations.manage' },
          validate: { params: Joi.object({ wid }) },
        },
        async handler(request) {
          return { data: await chat.deliveries(member(request).wid), next: null };
        },
      },
      {
        method: 'POST',
        path: '/v1/hooks/chat-relay/{wid}',
        options: hookOptions('chat-relay', refusals, { validate: { params: Joi.object({ wid }) } }),
        async handler(request, h) {
          const { workspaceId } = verified<{ workspaceId: string }>(request);
          const body = parseVerified<RelayClick>(request, h, relayClickSchema);
          const result = await chat.click([workspaceId], {
            token: body.token,
            platform: body.user.platform,
            chatUserId: body.user.id,
            note: body.note || null,
            channel: 'chat-relay',
          });
          return { decision: result.decision, approval: approvalOf(result) };
        },
      },
      {
        method: 'POST',
        path: '/v1/hooks/slack',
        // Every workspace's Slack secrets are tried on each request: a small body limit keeps an
        // unsigned flood cheap (Slack's interaction payloads are a few kilobytes).
        options: hookOptions('slack', refusals, {}, SLACK_BODY_LIMIT),
        async handler(request, h) {
          const { workspaceIds } = verified<{ workspaceIds: string[] }>(request);
          const payload = formPayload(request.payload as Buffer);
          if (payload === undefined) {
            throw new AppError('invalid_request', {
              message:
                'The body is not a Slack interaction: expected application/x-www-form-urlencoded with a JSON payload field.',
              details: { errors: [{ field: 'payload', message: 'payload is missing or not JSON' }] },
            });
          }
          const { error, value } = blockActionsSchema.validate(verifiedJson(payload), { abortEarly: false });
          if (error) validationFailAction(request, h, error);
          const click = value as BlockActions;
          const action = click.actions[0]!;
          try {
            const result = await chat.click(
              workspaceIds,
              {
                token: action.value,
                platform: 'slack',
                chatUserId: click.user.id,
                note: null,
                channel: 'slack',
                team: click.team?.id ?? null,
              },
              action.action_id,
            );
            const approval = approvalOf(result);
            return {
              ok: true,
              decision: result.decision,
              approval: { id: approval.id, status: approval.status },
              text: `Approval ${approval.id} is now ${approval.status}.`,
            };
          } catch (err) {
            // Slack wants a 200 for every click it delivered; what happened is said in the body.
            if (!(err instanceof AppError)) throw err;
            const approval = (err.details as { approval?: { id: string; status: string } }).approval;
            return {
              ok: false,
              error: { type: err.type, message: err.message },
              ...(approval ? { approval: { id: approval.id, status: approval.status } } : {}),
              text: err.message,
            };
          }
        },
      },
    ]);
  },
};
