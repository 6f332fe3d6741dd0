import Joi from 'joi';
import { anthropicMessages, anthropicSystem } from './schemas.js';
import { INLINE_CHARS, type TokenCounter } from './tokens.js';
import type { VendorJson as Json } from './vendor-json.js';

/**
 * POST /v1/messages/count_tokens (Anthropic shape; Claude Code calls it before every turn, with
 * ?beta=true). Rules:
 * - Asked of the routed model's vendor when its kind's adapter counts (Anthropic: its count is
 *   exact; forward.ts `attemptCount`), by the one failover rule (failover.ts: a named wait within
 *   the deadline is waited); otherwise, or when that vendor fails, counted here with the
 *   tokenizer (tokens.ts): the text of the system prompt and of every block (tool uses' names and
 *   inputs, tool results), the tool definitions as JSON, three tokens a message, and 1,600 an
 *   image or document (what Anthropic charges a large one).
 * - A vendor's refusal of the body (another 4xx) is the client's: 400 invalid_request with its
 *   message.
 * - Never a model call: no budget, no reservation, no call record, not counted against the month.
 */
export const countTokensSchema = Joi.object({
  model: Joi.string().max(256).required(),
  messages: anthropicMessages,
  system: anthropicSystem,
  tools: Joi.array().items(Joi.object().unknown(true)).max(1000),
  tool_choice: Joi.object().unknown(true),
  thinking: Joi.object().unknown(true),
}).unknown(true);

const PER_MESSAGE = 3;
const PER_IMAGE = 1600;

/** The texts of a system prompt or message content to count, and the tokens of its images. */
function blocksTexts(content: unknown, texts: string[]): number {
  if (typeof content === 'string') texts.push(content);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const b of content as Json[]) {
    if (!b || typeof b !== 'object') continue;
    if (typeof b.text === 'string') texts.push(b.text);
    if (b.type === 'image' || b.type === 'document') n += PER_IMAGE;
    else if (b.type === 'tool_use') texts.push(`${String(b.name ?? '')} ${JSON.stringify(b.input ?? {})}`);
    else if (b.type === 'tool_result') n += blocksTexts(b.content, texts);
    else if (b.type === 'thinking' && typeof b.thinking === 'string') texts.push(b.thinking);
  }
  return n;
}

/** The body's input tokens, counted here (each text as tokens.ts counts it, off the event loop when long). */
export async function countLocally(body: Json, tokens: TokenCounter): Promise<number> {
  const texts: string[] = [];
  let n = blocksTexts(body.system, texts);
  for (const m of (Array.isArray(body.messages) ? body.messages : []) as Json[])
    n += PER_MESSAGE + blocksTexts(m?.content, texts);
  if (Array.isArray(body.tools) && body.tools.length > 0) texts.push(JSON.stringify(body.tools));
  // Short texts are counted on the spot, each; many of them together would hold the event loop
  // as long as one long text (5,000 blocks of 2,000 letters: about a minute), so past INLINE_CHARS
  // in all they are counted as one text, as a long one is (a line break between two texts costs
  // at most a token more than counting them apart).
  const total = texts.reduce((sum, text) => sum + text.length, 0);
  const batch = total > INLINE_CHARS ? [texts.join('\n')] : texts;
  for (const counted of await Promise.all(batch.map((text) => tokens.count(text)))) n += counted;
  return Math.max(1, n);
}
