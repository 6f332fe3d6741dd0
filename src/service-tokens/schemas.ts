import Joi from 'joi';
import { parseCidr } from '../lib/ip-ranges.js';
import { MAX_TOKEN_DAYS, serviceTokenScopes } from './service.js';

const cidr = Joi.string()
  .max(64)
  .custom((value: string) => {
    parseCidr(value);
    return value;
  })
  .messages({ 'any.custom': '{{#label}} must be an IPv4 or IPv6 address or CIDR range, such as 10.0.0.0/8' });

export const createTokenSchema = Joi.object({
  name: Joi.string()
    .trim()
    .min(1)
    .max(100)
    .pattern(/^[^\s:]+$/)
    .required()
    .messages({
      'string.pattern.base': '{{#label}} must be one word (no spaces or colons): the ledger names the token by it',
    }),
  scopes: Joi.array()
    .items(Joi.string().valid(...serviceTokenScopes))
    .min(1)
    .unique()
    .required(),
  expiresInDays: Joi.number().strict().integer().min(1).max(MAX_TOKEN_DAYS).required(),
  ipAllow: Joi.array().items(cidr).max(50).unique(),
});
