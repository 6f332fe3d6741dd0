import Joi from 'joi';
import { rateLimitsSchema, type RateLimits } from '../settings/schema.js';
import type { KeyScope } from './records.js';

export interface MintKeyInput {
  scope: KeyScope;
  name?: string;
  principal?: string;
  team?: string;
  defaultTaskClass?: string;
  policyProfile?: string;
  agentId?: string;
  limits?: RateLimits | null;
  /** Whole days from minting until the key stops being accepted (absent or null: it never expires). */
  expiresInDays?: number | null;
}

/** The longest expiry a key may be minted with: ten years. */
export const MAX_KEY_DAYS = 3650;

/**
 * `expiresInDays`: a whole number of days from 1 to MAX_KEY_DAYS, as a JSON number (a string such
 * as "30" is refused, not read as 30). Shared by every route and command that mints a key.
 */
export const expiresInDaysSchema = Joi.number()
  .strict()
  .integer()
  .min(1)
  .max(MAX_KEY_DAYS)
  .messages(
    Object.fromEntries(
      ['number.base', 'number.integer', 'number.min', 'number.max', 'number.infinity', 'number.unsafe'].map((code) => [
        code,
        `{{#label}} must be a whole number of days from 1 to ${MAX_KEY_DAYS}`,
      ]),
    ),
  )
  .description(`days from minting until the key is refused, 1 to ${MAX_KEY_DAYS}; absent: no expiry`);

const label = Joi.string().trim().min(1).max(200);

/** Minting a key: POST /v1/admin/keys and POST /api/w/{wid}/keys. */
export const mintKeySchema = Joi.object<MintKeyInput>({
  scope: Joi.string().valid('agent', 'inference', 'admin').default('inference'),
  name: label,
  principal: label,
  team: label,
  defaultTaskClass: Joi.string()
    .pattern(/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/)
    .max(100)
    .messages({ 'string.pattern.base': '"defaultTaskClass" must be a dotted class such as code.review' }),
  policyProfile: label,
  agentId: Joi.string()
    .pattern(/^agt_[0-9A-Za-z]{22}$/)
    .when('scope', { is: 'agent', then: Joi.required(), otherwise: Joi.forbidden() })
    .messages({
      'any.unknown': '"agentId" is only for keys of scope agent',
      'string.pattern.base': '"agentId" must be an agent id (agt_...)',
    }),
  limits: rateLimitsSchema.allow(null).description("the key's requests and tokens per minute (none: no limit)"),
  expiresInDays: expiresInDaysSchema.allow(null),
});
