import { createHash } from 'node:crypto';
import type { VendorJson as Json } from '../vendor-json.js';

/**
 * Tool-call ids re-keyed for a vendor that limits them, so that any vendor can continue a
 * conversation another began: OpenAI and Azure take ids of at most 40 characters, Bedrock's
 * Converse at most 64 of letters, digits, `_` and `-`; Gemini's ids, which carry its thought
 * signature, and other vendors' can be longer. An id within the limit is kept; one beyond it
 * becomes `call_` and a digest of it, the same for the same id, so a call and its result still
 * match. The vendor's answer names its own ids, which the client sends back as they are.
 */
export const OPENAI_TOOL_ID_MAX = 40;
export const BEDROCK_TOOL_ID_MAX = 64;

export function rekeyToolId(id: unknown, max: number): unknown {
  if (typeof id !== 'string' || (id.length <= max && /^[A-Za-z0-9_-]+$/.test(id))) return id;
  return `call_${createHash('sha256')
    .update(id)
    .digest('base64url')
    .slice(0, max - 5)}`;
}

/** A chat-completions body with its tool-call ids (assistant `tool_calls`, `tool` messages) within `max`. */
export function rekeyChatToolIds(body: Json, max: number): Json {
  if (!Array.isArray(body.messages)) return body;
  const messages = (body.messages as Json[]).map((m): Json => {
    if (m?.role === 'tool') return { ...m, tool_call_id: rekeyToolId(m.tool_call_id, max) };
    if (m?.role === 'assistant' && Array.isArray(m.tool_calls))
      return { ...m, tool_calls: (m.tool_calls as Json[]).map((c) => ({ ...c, id: rekeyToolId(c?.id, max) })) };
    return m;
  });
  return { ...body, messages };
}
