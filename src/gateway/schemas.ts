import Joi from 'joi';
import type { Step } from './budgets.js';
export type { BudgetInput } from './budgets.js';

/**
 * The two request shapes the gateway accepts. Only what the gateway itself reads is checked;
 * every other vendor parameter passes through unchanged (`unknown(true)`), so a client may use a
 * vendor feature the gateway does not know of.
 */
const parts = Joi.array().items(Joi.object().unknown(true)).max(10_000);
// Read by the translation between shapes: arrays of objects, or absent.
const objects = (max: number) => Joi.array().items(Joi.object().unknown(true)).max(max);
const maxTokens = Joi.number().strict().integer().min(1).max(10_000_000);
/**
 * The Anthropic shape's conversation and system prompt, as Messages and its token count read them.
 * A `system` turn may stand anywhere in the conversation (Claude Code sends them mid-conversation):
 * an Anthropic-kind vendor takes it as it is; the translations carry it (translate/requests.ts).
 */
export const anthropicMessages = Joi.array()
  .items(
    Joi.object({
      role: Joi.string().valid('user', 'assistant', 'system').required(),
      content: Joi.alternatives(Joi.string().allow(''), parts).required(),
    }).unknown(true),
  )
  .min(1)
  .max(10_000)
  .required();
export const anthropicSystem = Joi.alternatives(Joi.string().allow(''), parts);

export const chatCompletionsSchema = Joi.object({
  model: Joi.string().max(256).required(),
  messages: Joi.array()
    .items(
      Joi.object({
        role: Joi.string().valid('system', 'developer', 'user', 'assistant', 'tool').required(),
        content: Joi.alternatives(Joi.string().allow(''), parts).allow(null),
        tool_calls: objects(1000).allow(null),
      }).unknown(true),
    )
    .min(1)
    .max(10_000)
    .required(),
  tools: objects(1000).allow(null),
  stream: Joi.boolean().strict(),
  stream_options: Joi.object({ include_usage: Joi.boolean().strict() }).unknown(true).allow(null),
  max_tokens: maxTokens.allow(null),
  max_completion_tokens: maxTokens.allow(null),
}).unknown(true);

export const messagesSchema = Joi.object({
  model: Joi.string().max(256).required(),
  max_tokens: maxTokens.required(),
  messages: anthropicMessages,
  system: anthropicSystem,
  stream: Joi.boolean().strict(),
  tools: objects(1000),
}).unknown(true);

/** A budget (docs/gateway.md, budgets): 400 invalid_budget lists every field at fault. */
const STEPS: readonly Step[] = ['nudge', 'downgrade', 'approval', 'block'];
export const budgetSchema = Joi.object({
  scope: Joi.object({
    kind: Joi.string().valid('workspace', 'team', 'principal', 'key', 'agent').required(),
    id: Joi.string().trim().min(1).max(200).required(),
  }).required(),
  amountMicros: Joi.number().strict().integer().min(1).max(Number.MAX_SAFE_INTEGER).required(),
  period: Joi.string().valid('day', 'week', 'month').required(),
  ladder: Joi.array()
    .items(
      Joi.object({
        at: Joi.number().strict().greater(0).max(1).required(),
        step: Joi.string()
          .valid(...STEPS)
          .required(),
      }),
    )
    .min(1)
    .max(4)
    .unique('step')
    .default([{ at: 1, step: 'block' }])
    .custom((ladder: Array<{ at: number; step: Step }>, helpers) => {
      for (let i = 1; i < ladder.length; i += 1) {
        if (
          ladder[i]!.at <= ladder[i - 1]!.at ||
          STEPS.indexOf(ladder[i]!.step) <= STEPS.indexOf(ladder[i - 1]!.step)
        ) {
          return helpers.message({
            custom:
              '{{#label}} must rise: each rung at a larger share than the one before, in the order nudge, downgrade, approval, block',
          });
        }
      }
      return ladder;
    }),
});
