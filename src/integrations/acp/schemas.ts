import Joi from 'joi';

/**
 * A merchant's checkout webhook event (ACP 2026-04-17, `WebhookEvent`): `type` order_create or
 * order_update, `data` the order (`type: "order"`, `checkout_session_id`, `permalink_url`,
 * `status`, and the rest of the Order object, kept but not read). Fields beside `type` and
 * `data` are refused, as the specification's `additionalProperties: false` says.
 */
export const ACP_EVENT_TYPES = ['order_create', 'order_update'] as const;

const text = (max: number) => Joi.string().min(1).max(max);

export const acpEventSchema = Joi.object({
  type: Joi.string()
    .valid(...ACP_EVENT_TYPES)
    .required()
    .messages({ 'any.only': '{{#label}} must be order_create or order_update' }),
  data: Joi.object({
    type: Joi.string().valid('order').required(),
    id: text(256),
    checkout_session_id: text(256).required(),
    permalink_url: Joi.string()
      .uri({ scheme: ['https', 'http'] })
      .max(2048)
      .required(),
    status: text(64).required(),
    currency: Joi.string().pattern(/^[A-Za-z]{3}$/),
    totals: Joi.array().max(100),
  })
    .unknown(true)
    .required(),
});

export interface AcpEvent {
  type: (typeof ACP_EVENT_TYPES)[number];
  data: {
    type: 'order';
    id?: string;
    checkout_session_id: string;
    permalink_url: string;
    status: string;
    currency?: string;
    totals?: unknown[];
    [more: string]: unknown;
  };
}
