import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { sessionStrategies } from '../../http/auth/session.js';
import type { Guards } from '../../http/guards.js';
import { wid } from '../../http/params.js';
import { cardRoutes } from '../http.js';
import type { Cards } from '../cards.js';
import { hookOptions, parseVerified, type Refusals } from '../../http/inbound.js';
import { verified } from '../../http/auth/signature.js';
import type { StripeEvents } from './service.js';
import { BILLING_VARIANT, type StripeVerified } from './signature.js';
import { stripeEventSchema, type StripeEvent } from './schemas.js';

/**
 * The payment provider (Stripe Issuing and Billing), docs/integrations.md:
 * - `POST /v1/hooks/stripe/{wid}`: Stripe's deliveries, verified by the `stripe` strategy
 *   (signature.ts) before anything parses them; bodies up to STRIPE_BODY_LIMIT (billing
 *   payloads run larger than the 1 MB of other routes, docs/operations.md#body-limits).
 * - `POST /v1/hooks/stripe/billing`: the operator's one billing endpoint, verified by the
 *   `stripe:billing` strategy (the operator's billing secrets only; none configured: every request
 *   is 401) and routed by each event's `metadata.workspaceId` (service.ts `handleBilling`). Its
 *   refusals are not counted (the address names no workspace).
 * - The console's card routes under `/api/w/{wid}/stripe/cards` (card-routes.ts).
 * The workspace's signing secret (its own Stripe account: Issuing) is set with
 * `PUT /api/w/{wid}/integrations/stripe { signingSecret }` (../http.ts); the operator's billing
 * secret (plans) is a setting (`billing.stripeSigningSecret`). Which one signed is the
 * verifier's answer, read here and passed on (service.ts decides what each may change).
 */
export const STRIPE_BODY_LIMIT = 5 * 1_048_576;

export const stripeRoutes: Plugin<{
  stripe: StripeEvents;
  cards: Cards;
  refusals: Refusals;
  production: boolean;
  guards: Guards;
}> = {
  name: 'svc-stripe',
  register(server, { stripe, cards, refusals, production, guards }) {
    const session = { strategies: sessionStrategies(production) };
    const write = { onPreAuth: guards.consoleWrite };
    server.route([
      ...cardRoutes('stripe', { cards, session, write }),
      {
        // A literal segment: hapi matches it before `{wid}` (which would refuse it anyway: not a workspace id).
        method: 'POST',
        path: '/v1/hooks/stripe/billing',
        options: hookOptions('stripe', refusals, {}, STRIPE_BODY_LIMIT, BILLING_VARIANT),
        async handler(request, h) {
          return h
            .response((await stripe.handleBilling(parseVerified<StripeEvent>(request, h, stripeEventSchema))).body)
            .code(200);
        },
      },
      {
        method: 'POST',
        path: '/v1/hooks/stripe/{wid}',
        options: hookOptions('stripe', refusals, { validate: { params: Joi.object({ wid }) } }, STRIPE_BODY_LIMIT),
        async handler(request, h) {
          const { wid: w } = request.params as { wid: string };
          const answer = await stripe.handle(
            w,
            verified<StripeVerified>(request).signers,
            parseVerified<StripeEvent>(request, h, stripeEventSchema),
          );
          const response = h.response(answer.body).code(200);
          for (const [name, value] of Object.entries(answer.headers)) response.header(name, value);
          return response;
        },
      },
    ]);
  },
};
