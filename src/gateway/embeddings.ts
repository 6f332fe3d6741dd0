import Joi from 'joi';
import type { Upstream } from '../lib/upstream.js';
import { exchange } from './exchange.js';
import { readJson, type Attempt, type AttemptResult } from './forward.js';
import { openaiUsage } from './translate/responses.js';

/**
 * POST /v1/embeddings at one model (OpenAI shape, both ways): the body goes to the vendor's
 * /embeddings with the upstream model's name and the provider's secret, and the answer comes back
 * with the catalogue's model name. Usage is input tokens only (`prompt_tokens`). Only an
 * OpenAI-kind provider is asked: a model of another kind is a failure of that attempt (the next
 * candidate is tried), since its vendor has no such endpoint here.
 */
export async function attemptEmbeddings(upstream: Upstream, a: Attempt, _id: string): Promise<AttemptResult> {
  if (a.provider.kind !== 'openai')
    return { kind: 'failed', reason: `provider kind ${a.provider.kind} serves no embeddings through the gateway` };
  const sent = await exchange(
    upstream,
    '/embeddings',
    { authorization: `Bearer ${a.provider.apiKey ?? ''}`, traceparent: a.traceparent },
    { ...a.body, model: a.model.upstreamModel },
    a.signal,
  );
  if (sent.kind !== 'answer') return sent;
  const read = await readJson(sent.answer, sent.started);
  if (read.kind === 'failed') return read;
  const usage = openaiUsage(read.body.usage);
  return {
    kind: 'json',
    usage: usage && { input: usage.input, output: 0 },
    upstreamMs: read.upstreamMs,
    body: { ...read.body, model: a.clientModel },
  };
}

/**
 * The body of POST /v1/embeddings (OpenAI shape): `input` a string, strings, or token arrays;
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
