import { createHash } from 'node:crypto';
import type { ProviderKind as VendorKind } from '../../settings/schema.js';
import type { VendorJson as Json } from '../vendor-json.js';

/**
 * The fields beyond a conversation, its tools and its sampling, carried in their translated
 * meaning to a vendor of another shape (the translations call the builders here), or refused by
 * name before anything is sent (uncarried.ts, read by steps/carry.ts). Rule: refused by name,
 * never dropped. Rules:
 * - Thinking: Anthropic `thinking` (enabled with a budget, adaptive) and `output_config.effort`
 *   become OpenAI `reasoning_effort` (a budget up to 2,048 tokens low, up to 12,288 medium, more
 *   high; effort max as high), Gemini `thinkingConfig` (Gemini 3 `thinkingLevel` low or high,
 *   earlier models a `thinkingBudget`), and on Bedrock, for a Claude model, the same fields in
 *   `additionalModelRequestFields` with the betas they need. `reasoning_effort` becomes
 *   Anthropic `thinking` with a budget (low 1,024, medium 4,096, high 16,384; `max_tokens`
 *   raised to the budget and 1,024 more when it is below it); none and minimal are no thinking.
 *   Adaptive thinking and an effort (`output_config.effort`, `reasoning_effort`, Responses
 *   `reasoning.effort`) guide how much a model thinks: to a model that does not think (OpenAI's
 *   gpt-4 and gpt-3.5 families, Gemini before 2.5) they are not sent, as it would not think
 *   either; nor to a Bedrock model other than Claude, whose own reasoning fields this gateway
 *   does not know (Codex sends an effort by default: refusing it would refuse Codex there).
 *   Thinking `enabled` is an explicit ask: sent, or refused by name (a Bedrock model other than
 *   Claude).
 * - Context editing (`context_management`): clearing thinking is carried by every translation
 *   (no vendor of another shape is ever sent earlier thinking); Bedrock's Claude takes the field
 *   as it is; other edits (clearing tool results, compaction) are refused for OpenAI, Azure and
 *   Gemini.
 * - The end user: Anthropic `metadata.user_id` is OpenAI `safety_identifier` and Bedrock
 *   `requestMetadata.user`, as its SHA-256 (hex), within both limits; OpenAI `safety_identifier`
 *   or `user` is Anthropic `metadata.user_id`. Gemini has no such field: advisory, not sent.
 * - Advisory fields, which change how a vendor caches or phrases, not what it answers, and which
 *   the agents send by default, are not sent where the vendor has no counterpart: prompt-cache
 *   hints (`cache_control`, `prompt_cache_key`, `prompt_cache_retention`, `prompt_cache_options`),
 *   `verbosity`, `service_tier` auto or standard, a tool's `defer_loading`, and
 *   `parallel_tool_calls: false` at Gemini and Bedrock (Codex sends it; Anthropic takes it as
 *   `disable_parallel_tool_use`; the others may answer with several calls, which agents run in
 *   turn).
 * - Everything else a vendor kind has no way to carry is refused by name: 400 invalid_request,
 *   `errors` naming each field with what to do, before any vendor is called.
 */

export type { VendorKind };
export type RequestShape = 'openai' | 'anthropic';

/** A model that does not think (adaptive thinking and effort are not sent to it). */
export const doesNotThink = (kind: VendorKind, model: string): boolean =>
  kind === 'bedrock' ? !isClaude(model) : /^(gpt-4|gpt-3\.5|chatgpt|gemini-(1\.|2\.0))/i.test(model);

/** A Claude model on Bedrock (an `anthropic.` model id, or a profile naming Claude). */
export const isClaude = (model: string): boolean => /anthropic\.|claude/i.test(model);

const hashed = (id: string): string => createHash('sha256').update(id).digest('hex');

/** The reasoning effort Anthropic's thinking and effort settings ask for, or undefined. */
export function effortOf(body: Json): string | undefined {
  const effort = body.output_config?.effort;
  if (typeof effort === 'string') return effort === 'max' ? 'high' : effort;
  const thinking = body.thinking;
  if (thinking?.type === 'enabled' && typeof thinking.budget_tokens === 'number')
    return thinking.budget_tokens <= 2048 ? 'low' : thinking.budget_tokens <= 12288 ? 'medium' : 'high';
  return undefined;
}

/** OpenAI chat fields carrying an Anthropic body's thinking, effort, end user and tool settings. */
export function anthropicExtrasForOpenai(body: Json, model: string): Json {
  const out: Json = {};
  const effort = effortOf(body);
  const explicit = body.thinking?.type === 'enabled';
  if (effort && (explicit || !doesNotThink('openai', model))) out.reasoning_effort = effort;
  if (typeof body.metadata?.user_id === 'string') out.safety_identifier = hashed(body.metadata.user_id);
  if (body.tool_choice?.disable_parallel_tool_use === true && Array.isArray(body.tools) && body.tools.length > 0)
    out.parallel_tool_calls = false;
  if (body.service_tier === 'standard_only') out.service_tier = 'default';
  // Gemini reads top_k from the pivot (the carry step refuses it for OpenAI and Azure).
  if (typeof body.top_k === 'number') out.top_k = body.top_k;
  return out;
}

const BUDGET: Record<string, number> = { low: 1024, medium: 4096, high: 16384, xhigh: 16384 };

/** Anthropic fields carrying an OpenAI chat body's reasoning effort, end user and tool settings. */
export function openaiExtrasForAnthropic(body: Json, maxTokens: number): Json {
  const out: Json = {};
  const budget = BUDGET[String(body.reasoning_effort)];
  if (budget !== undefined) {
    out.thinking = { type: 'enabled', budget_tokens: budget };
    if (maxTokens <= budget) out.max_tokens = budget + 1024;
  }
  const user = body.safety_identifier ?? body.user;
  if (typeof user === 'string' && user !== '') out.metadata = { user_id: user };
  if (body.service_tier === 'default') out.service_tier = 'standard_only';
  return out;
}

/** A tool choice with parallel calls turned off when the OpenAI body says so. */
export const withParallel = (choice: Json | undefined, body: Json): Json | undefined =>
  body.parallel_tool_calls === false && choice?.type !== 'none'
    ? { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true }
    : choice;

/** The betas Bedrock's Claude takes in `anthropic_beta`, for the fields carried there. */
const BEDROCK_BETAS = new Set([
  'interleaved-thinking-2025-05-14',
  'context-management-2025-06-27',
  'effort-2025-11-24',
  'context-1m-2025-08-07',
  'output-128k-2025-02-19',
]);

/**
 * The Converse fields beyond messages, system, inference and tools, from an Anthropic body:
 * structured output, and for a Claude model its thinking, effort, context editing and top_k.
 */
export function converseExtras(body: Json, model: string, beta?: string): Json {
  const out: Json = {};
  const format = body.output_config?.format ?? body.output_format;
  if (format?.type === 'json_schema' && format.schema)
    out.outputConfig = {
      textFormat: {
        type: 'json_schema',
        structure: { jsonSchema: { name: 'output', schema: JSON.stringify(format.schema) } },
      },
    };
  if (typeof body.metadata?.user_id === 'string') out.requestMetadata = { user: hashed(body.metadata.user_id) };
  if (!isClaude(model)) return out;
  const extra: Json = {};
  if (body.thinking != null) extra.thinking = body.thinking;
  if (typeof body.output_config?.effort === 'string') extra.output_config = { effort: body.output_config.effort };
  if (body.context_management != null) extra.context_management = body.context_management;
  if (typeof body.top_k === 'number') extra.top_k = body.top_k;
  const betas = (beta ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter((b) => BEDROCK_BETAS.has(b));
  if (betas.length > 0 && Object.keys(extra).length > 0) extra.anthropic_beta = betas;
  if (Object.keys(extra).length > 0) out.additionalModelRequestFields = extra;
  return out;
}

const GEMINI_BUDGET: Record<string, number> = { minimal: 0, low: 1024, medium: 8192, high: 24576, xhigh: 24576 };

/** The Gemini generationConfig fields beyond the core, from an OpenAI chat body (the pivot). */
export function geminiGenerationExtras(body: Json): Json {
  const out: Json = {};
  const model = String(body.model ?? '');
  const effort = body.reasoning_effort;
  if (typeof effort === 'string' && effort !== 'none' && !doesNotThink('gemini', model))
    out.thinkingConfig = /^gemini-3/.test(model)
      ? { thinkingLevel: effort === 'minimal' || effort === 'low' ? 'low' : 'high' }
      : { thinkingBudget: GEMINI_BUDGET[effort] ?? -1 };
  if (typeof body.top_k === 'number') out.topK = body.top_k;
  if (typeof body.seed === 'number') out.seed = body.seed;
  if (typeof body.frequency_penalty === 'number' && body.frequency_penalty !== 0)
    out.frequencyPenalty = body.frequency_penalty;
  if (typeof body.presence_penalty === 'number' && body.presence_penalty !== 0)
    out.presencePenalty = body.presence_penalty;
  if (typeof body.n === 'number' && body.n > 1) out.candidateCount = body.n;
  return out;
}
