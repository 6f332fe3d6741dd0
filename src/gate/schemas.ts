import Joi from 'joi';
import { hasNonFiniteNumber, nestsDeeperThan } from '../lib/well-formed.js';
import { BUILT_IN_TYPES } from '../mandates/schemas.js';
import { authorizeAp2Schema } from '../ap2/schemas.js';

/**
 * The gate's request bodies (docs/gate.md#the-gate), validated with every field's error listed.
 * Rules:
 * - `type`: a built-in single word, or a dotted custom type (`crm.update`).
 * - `summary`: one sentence, required.
 * - `payment.amount`: a positive whole number of minor units (a JSON integer, never a string);
 *   `payment.currency`: three upper-case letters; `payment.merchant`: who is paid, always named
 *   (a receipt names its merchant: docs/gate.md#receipts).
 * - `challenge`: in place of `payment`, a 402 payment challenge as received (`scheme` x402 or mpp,
 *   `value` the header's value, printable ASCII up to 16 KB); ./challenge.ts reads the payment from it.
 * - `metadata`: any JSON object, at most 8 levels deep and 16 KB, kept with the action.
 * - `session.id`: 1 to 128 printable characters.
 * - The idempotency key: 1 to 255 printable characters, in the body or the header.
 * - `ap2`: `{ mandate, refusal? }`, a closed AP2 mandate chain (docs/ap2.md).
 * - `receipts`: the protocol receipts asked for beside svc's own, `ap2` and/or `acp`, for a
 *   payment only; `acp` (the checkout session an ACP allowance is for: `checkoutSessionId`,
 *   `merchantId`) comes with `receipts: ["acp"]`, and alone asks for the allowance too.
 * - Unknown fields are refused, so a misspelt field is never silently ignored.
 */
const PRINTABLE = /^[\x20-\x7e]+$/;
const METADATA_DEPTH = 8;
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const METADATA_BYTES = 16_384;
/** The most text a challenge value may hold (MPP asks servers to keep one under 8 KB). */
export const MAX_CHALLENGE_CHARS = 16_384;

const typeSchema = Joi.string()
  .max(128)
  .pattern(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/)
  .custom((value: string, helpers) => {
    if (!value.includes('.') && !(BUILT_IN_TYPES as readonly string[]).includes(value)) {
      return helpers.message({
        custom: `{{#label}} "${value}" is not a built-in type (${BUILT_IN_TYPES.join(', ')}); custom types are dotted, such as crm.update`,
      });
    }
    return value;
  })
  .messages({ 'string.pattern.base': '{{#label}} must be a single word or a dotted name of letters, digits, _ and -' });

export const idempotencyKeySchema = Joi.string()
  .min(1)
  .max(255)
  .pattern(PRINTABLE)
  .messages({ 'string.pattern.base': '{{#label}} must be printable ASCII characters' });

export const sessionIdSchema = Joi.string()
  .min(1)
  .max(128)
  .pattern(PRINTABLE)
  .messages({ 'string.pattern.base': '{{#label}} must be 1 to 128 printable characters' });

/** The protocol receipts an authorize request may ask for. */
export const PROTOCOL_RECEIPTS = ['ap2', 'acp'] as const;

/** An ACP checkout session's or merchant's id: 1 to 512 printable characters. */
const acpIdSchema = Joi.string()
  .min(1)
  .max(512)
  .pattern(PRINTABLE)
  .messages({ 'string.pattern.base': '{{#label}} must be printable ASCII characters' });

export const authorizeSchema = Joi.object({
  type: typeSchema.required(),
  summary: Joi.string().trim().min(1).max(1000).required(),
  payment: Joi.object({
    amount: Joi.number().strict().integer().min(1).max(Number.MAX_SAFE_INTEGER).required().messages({
      'number.base': '{{#label}} must be a whole number of minor units',
      'number.integer': '{{#label}} must be a whole number of minor units',
      'number.min': '{{#label}} must be above zero',
    }),
    currency: Joi.string()
      .strict()
      .pattern(/^[A-Z]{3}$/)
      .required()
      .messages({ 'string.pattern.base': '{{#label}} must be three upper-case letters, such as EUR' }),
    // A domain name, so that a rule's `*.acme.example` means acme.example's subdomains only.
    merchant: Joi.string()
      .trim()
      .lowercase()
      .max(253)
      .pattern(HOSTNAME)
      .required()
      .messages({ 'string.pattern.base': "{{#label}} must be the merchant's domain name, such as acme.example" }),
  }),
  challenge: Joi.object({
    scheme: Joi.string().valid('x402', 'mpp').required().messages({ 'any.only': '{{#label}} must be x402 or mpp' }),
    value: Joi.string()
      .strict()
      .min(1)
      .max(MAX_CHALLENGE_CHARS)
      .pattern(/^[\x20-\x7e\t]+$/)
      .required()
      .messages({ 'string.pattern.base': "{{#label}} must be the header's value as received (printable ASCII)" }),
  }),
  target: Joi.object({ domain: Joi.string().trim().lowercase().hostname().max(253) }),
  session: Joi.object({ id: sessionIdSchema.required() }),
  idempotencyKey: idempotencyKeySchema,
  // A closed AP2 Payment Mandate chained to an imported open one (docs/ap2.md#presenting-a-closed-mandate).
  ap2: authorizeAp2Schema,
  metadata: Joi.object()
    .unknown(true)
    .max(50)
    .custom((value: Record<string, unknown>, helpers) => {
      if (nestsDeeperThan(value, METADATA_DEPTH))
        return helpers.message({ custom: `{{#label}} may nest at most ${METADATA_DEPTH} levels deep` });
      if (hasNonFiniteNumber(value))
        return helpers.message({ custom: '{{#label}} holds a number too large for JSON to carry exactly' });
      if (Buffer.byteLength(JSON.stringify(value)) > METADATA_BYTES)
        return helpers.message({ custom: `{{#label}} may hold at most ${METADATA_BYTES} bytes of JSON` });
      return value;
    }),
  // The receipts in the agent-commerce protocols' shapes asked for beside svc's own (docs/ap2-receipts.md, docs/acp.md).
  receipts: Joi.array()
    .items(
      Joi.string()
        .valid(...PROTOCOL_RECEIPTS)
        .messages({ 'any.only': '{{#label}} must be one of ap2, acp' }),
    )
    .unique()
    .min(1)
    .max(PROTOCOL_RECEIPTS.length),
  acp: Joi.object({
    checkoutSessionId: acpIdSchema.required(),
    merchantId: acpIdSchema.max(256).required(),
  }),
})
  .oxor('payment', 'challenge')
  .messages({ 'object.oxor': 'send "payment" or "challenge", not both' })
  .when(Joi.object({ type: Joi.valid('payment') }).unknown(), {
    then: Joi.object().or('payment', 'challenge').messages({
      'object.missing': 'a payment action needs "payment" (or "challenge", a 402 payment challenge)',
    }),
  })
  // A payment read from a 402 challenge may ask for protocol receipts too.
  .when(Joi.object({ receipts: Joi.array().required(), challenge: Joi.forbidden() }).unknown(), {
    then: Joi.object({
      payment: Joi.required().messages({
        'any.required': '{{#label}} is required: AP2 and ACP receipts are for a payment',
      }),
    }),
  })
  .when(Joi.object({ acp: Joi.object().required(), challenge: Joi.forbidden() }).unknown(), {
    then: Joi.object({
      payment: Joi.required().messages({ 'any.required': '{{#label}} is required: an ACP allowance is for a payment' }),
    }),
  })
  .when(Joi.object({ receipts: Joi.array().has(Joi.valid('acp')).required() }).unknown(), {
    then: Joi.object({
      acp: Joi.required().messages({
        'any.required':
          '{{#label}} is required with receipts "acp": the checkout session it is for (checkoutSessionId and merchantId)',
      }),
    }),
  });

export interface AuthorizeInput {
  type: string;
  summary: string;
  payment?: { amount: number; currency: string; merchant?: string };
  challenge?: { scheme: 'x402' | 'mpp'; value: string };
  target?: { domain?: string };
  session?: { id: string };
  idempotencyKey?: string;
  ap2?: { mandate: string; refusal?: string };
  metadata?: Record<string, unknown>;
  receipts?: Array<(typeof PROTOCOL_RECEIPTS)[number]>;
  acp?: { checkoutSessionId: string; merchantId: string };
}

export const settleSchema = Joi.object({
  status: Joi.string()
    .valid('completed', 'failed', 'cancelled')
    .required()
    .messages({ 'any.only': '{{#label}} must be one of completed, failed, cancelled' }),
  amount: Joi.number()
    .strict()
    .integer()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .messages({ 'number.min': '{{#label}} cannot be negative' })
    .messages({
      'number.base': '{{#label}} must be a whole number of minor units',
      'number.integer': '{{#label}} must be a whole number of minor units',
    }),
});

export interface SettleInput {
  status: 'completed' | 'failed' | 'cancelled';
  amount?: number;
}
