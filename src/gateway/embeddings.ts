import Joi from 'joi';

/**
 * The body of POST /v1/embeddings (OpenAI shape; sent on by the adapters that have embeddings:
 * forward.ts `attemptEmbeddings`): `input` a string, strings, or token arrays;
 * `dimensions`, `encoding_format` (float or base64) and `user`. Every field at fault is listed.
 */
const tokenArray = Joi.array().items(Joi.number().strict().integer().min(0)).min(1).max(100_000);
export const embeddingsSchema = Joi.object({
  model: Joi.string().max(256).required(),
  input: Joi.alternatives(
    Joi.string().min(1),
    Joi.array().items(Joi.string().min(1)).min(1).max(2048),
    tokenArray,
    Joi.array().items(tokenArray).min(1).max(2048),
  )
    .required()
    .messages({
      'alternatives.match':
        '{{#label}} must be a non-empty string, an array of up to 2048 non-empty strings, or token arrays',
    }),
  dimensions: Joi.number().strict().integer().min(1).max(65_536),
  encoding_format: Joi.string().valid('float', 'base64'),
  user: Joi.string().max(256),
  stream: Joi.any()
    .forbidden()
    .messages({ 'any.unknown': '{{#label}} is not supported: embeddings are answered whole' }),
}).unknown(true);
