import Joi from 'joi';

/**
 * The Stripe events the payment-provider route reads (docs/integrations.md), as Stripe sends them (snake
 * case, lower-case currencies, unix seconds). Only the fields used are checked; everything else is
 * let through unread. Events of other types are accepted with their envelope alone.
 */
const id = (max = 255) =>
  Joi.string()
    .pattern(/^[A-Za-z0-9_]+$/)
    .max(max);
const expandable = Joi.alternatives(id(), Joi.object({ id: id().required() }).unknown(true));
const currency = Joi.string().pattern(/^[A-Za-z]{3}$/);
/**
 * Unix seconds, at most the last second of 9999: any later one could not be written as a date
 * (a signed body must never make the server fail). How far ahead `created` may be is checked
 * against the clock in service.ts.
 */
export const MAX_UNIX_SECONDS = 253_402_300_799;
const seconds = Joi.number().integer().min(0).max(MAX_UNIX_SECONDS);
const amount = Joi.number().integer().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);
const merchantData = Joi.object({
  name: Joi.string().max(500).allow(null, ''),
  url: Joi.string().max(2048).allow(null, ''),
  category_code: Joi.string().max(16).allow(null, ''),
  network_id: Joi.string().max(255).allow(null, ''),
}).unknown(true);
const cardRef = Joi.alternatives(
  Joi.string().pattern(/^[A-Za-z0-9_-]{1,64}$/),
  Joi.object({
    id: Joi.string()
      .pattern(/^[A-Za-z0-9_-]{1,64}$/)
      .required(),
  }).unknown(true),
);

const authorization = Joi.object({
  id: id().required(),
  card: cardRef.required(),
  amount: amount.min(0).required(),
  currency: currency.required(),
  pending_request: Joi.object({ amount: amount.min(0).required(), currency: currency.required() })
    .unknown(true)
    .allow(null),
  merchant_data: merchantData.required(),
}).unknown(true);

const transaction = Joi.object({
  id: id().required(),
  type: Joi.string().max(64).required(),
  card: cardRef.required(),
  amount: amount.required(),
  currency: currency.required(),
  merchant_data: merchantData.required(),
  created: seconds.required(),
}).unknown(true);

const metadata = Joi.object().pattern(Joi.string(), Joi.string().allow('').max(500)).allow(null);
const subscription = Joi.object({
  id: id().required(),
  customer: expandable.allow(null),
  status: Joi.string().max(64).required(),
  metadata,
  current_period_end: seconds.allow(null),
  items: Joi.object({
    data: Joi.array()
      .max(100)
      .items(
        Joi.object({
          price: Joi.object({ id: Joi.string().max(255), lookup_key: Joi.string().max(200).allow(null) })
            .unknown(true)
            .allow(null),
          current_period_end: seconds.allow(null),
        }).unknown(true),
      ),
  }).unknown(true),
}).unknown(true);

const invoice = Joi.object({
  id: Joi.string().max(255),
  subscription: expandable.allow(null),
  parent: Joi.object({
    subscription_details: Joi.object({ subscription: expandable.allow(null), metadata })
      .unknown(true)
      .allow(null),
  })
    .unknown(true)
    .allow(null),
  subscription_details: Joi.object({ metadata }).unknown(true).allow(null),
}).unknown(true);

const dataOf = (object: Joi.Schema) => Joi.object({ object: object.required() }).unknown(true).required();

export const stripeEventSchema = Joi.object({
  id: Joi.string()
    .pattern(/^evt_[A-Za-z0-9_]{1,250}$/)
    .required(),
  type: Joi.string().max(128).required(),
  created: seconds.required(),
  api_version: Joi.string().max(64).allow(null),
  livemode: Joi.boolean(),
  data: Joi.when('type', {
    switch: [
      { is: 'issuing_authorization.request', then: dataOf(authorization) },
      { is: 'issuing_transaction.created', then: dataOf(transaction) },
      {
        is: Joi.valid(
          'customer.subscription.created',
          'customer.subscription.updated',
          'customer.subscription.deleted',
        ),
        then: dataOf(subscription),
      },
      { is: 'invoice.payment_failed', then: dataOf(invoice) },
    ],
    otherwise: Joi.object().unknown(true).required(),
  }),
}).unknown(true);

type Ref = string | { id: string };
export interface StripeMerchantData {
  name?: string | null;
  url?: string | null;
  category_code?: string | null;
  network_id?: string | null;
}

export interface StripeEvent {
  id: string;
  type: string;
  created: number;
  api_version?: string | null;
  livemode?: boolean;
  data: { object: Record<string, unknown> };
}

export interface StripeAuthorization {
  id: string;
  card: Ref;
  amount: number;
  currency: string;
  pending_request?: { amount: number; currency: string } | null;
  merchant_data: StripeMerchantData;
}

export interface StripeTransaction {
  id: string;
  type: string;
  card: Ref;
  amount: number;
  currency: string;
  merchant_data: StripeMerchantData;
  created: number;
}

export interface StripeSubscription {
  id: string;
  customer?: Ref | null;
  status: string;
  metadata?: Record<string, string> | null;
  current_period_end?: number | null;
  items?: {
    data?: Array<{ price?: { id?: string; lookup_key?: string | null } | null; current_period_end?: number | null }>;
  };
}

export interface StripeInvoice {
  id?: string;
  subscription?: Ref | null;
  parent?: {
    subscription_details?: { subscription?: Ref | null; metadata?: Record<string, string> | null } | null;
  } | null;
  subscription_details?: { metadata?: Record<string, string> | null } | null;
}

export const refId = (r: Ref | null | undefined): string | null =>
  r == null ? null : typeof r === 'string' ? r : r.id;
