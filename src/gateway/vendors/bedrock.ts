import { anthropicFallback, usualFault } from '../failover.js';
import type { VendorJson as Json } from '../vendor-json.js';
import { BEDROCK_TOOL_ID_MAX, rekeyToolId } from '../translate/tool-ids.js';
import { anthropicStop, bedrockEvents, converseUsage } from './bedrock-stream.js';
import { signedHeaders } from './bedrock-sign.js';
import { converseExtras } from '../translate/carry.js';
import type { VendorAdapter } from './vendor.js';

export { anthropicStop, converseUsage };

/**
 * Amazon Bedrock's Converse API: `POST {baseUrl}/model/{modelId}/converse`, and
 * `/converse-stream` for a stream (answered in AWS's binary event-stream framing, read by AWS's
 * codec: bedrock-stream.ts), signed with SigV4 (bedrock-sign.ts). Translated through the
 * Anthropic shape, which Converse follows closely:
 * - `system`, and any `system` turn in the conversation after it (Converse has no system turns),
 *   becomes the system text; text, base64 images, `tool_use` and `tool_result`
 *   blocks become `text`, `image`, `toolUse` and `toolResult` blocks (an image by URL has no
 *   Converse counterpart and is dropped; an empty text block, which Converse refuses, too).
 *   Tool-call ids within Converse's 64 characters (translate/tool-ids.ts). Structured output,
 *   thinking and the other fields beyond these: translate/carry.ts `converseExtras`.
 * - `max_tokens`, `temperature`, `top_p`, `stop_sequences` go in `inferenceConfig`; tools in
 *   `toolConfig` (`toolChoice` auto, any or one tool; Converse has no "none": the tools are
 *   offered without a choice). A conversation with earlier tool calls and no tools offered
 *   declares the tools it used, since Converse refuses tool blocks without a toolConfig.
 * - `stopReason` end_turn, tool_use, max_tokens and stop_sequence keep their names;
 *   guardrail_intervened and content_filtered are a refusal.
 *
 * Errors (the `x-amzn-errortype` header or the body's `__type`): throttling, quota, a model not
 * ready, failing or timing out, and 5xx fail over; so does a refused signature or credential
 * (403, the operator's); a ValidationException (400) is the client's request refused (marked as
 * the context window when it says the input is too long). ThrottlingException is throttling:
 * Bedrock names no wait, so it is retried with backoff when no other model serves.
 */

const FAILOVER_TYPES = new Set([
  'ThrottlingException',
  'ServiceQuotaExceededException',
  'ModelNotReadyException',
  'ModelErrorException',
  'ModelTimeoutException',
  'InternalServerException',
  'ServiceUnavailableException',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'AccessDeniedException',
  'ExpiredTokenException',
]);

const IMAGE_FORMATS = new Set(['png', 'jpeg', 'gif', 'webp']);

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((b: Json) => (typeof b?.text === 'string' ? b.text : '')).join('')
      : '';

function toBlocks(content: unknown): Json[] {
  const blocks = (typeof content === 'string' ? [{ type: 'text', text: content }] : content) as Json[];
  if (!Array.isArray(blocks)) return [];
  return blocks.flatMap((b): Json[] => {
    if (b?.type === 'text') return typeof b.text === 'string' && b.text !== '' ? [{ text: b.text }] : [];
    if (b?.type === 'image' && b.source?.type === 'base64') {
      const format = String(b.source.media_type ?? '').replace(/^image\//, '');
      return IMAGE_FORMATS.has(format) ? [{ image: { format, source: { bytes: b.source.data } } }] : [];
    }
    if (b?.type === 'tool_use')
      return [{ toolUse: { toolUseId: rekeyToolId(b.id, BEDROCK_TOOL_ID_MAX), name: b.name, input: b.input ?? {} } }];
    if (b?.type === 'tool_result') {
      const text = textOf(b.content);
      return [
        {
          toolResult: {
            toolUseId: rekeyToolId(b.tool_use_id, BEDROCK_TOOL_ID_MAX),
            content: [{ text: text === '' ? ' ' : text }],
            status: b.is_error === true ? 'error' : 'success',
          },
        },
      ];
    }
    return [];
  });
}

const toolChoiceOf = (choice: Json | undefined): Json | undefined => {
  if (choice?.type === 'auto') return { auto: {} };
  if (choice?.type === 'any') return { any: {} };
  if (choice?.type === 'tool' && typeof choice.name === 'string') return { tool: { name: choice.name } };
  return undefined;
};

/** An Anthropic messages body as a Converse body. */
export function toConverseRequest(body: Json): Json {
  const messages: Json[] = [];
  const system: string[] = [textOf(body.system)];
  for (const m of (Array.isArray(body.messages) ? body.messages : []) as Json[]) {
    // Converse takes system text only beside the conversation: a system turn joins it, in order.
    if (m?.role === 'system') {
      system.push(textOf(m.content));
      continue;
    }
    const role = m?.role === 'assistant' ? 'assistant' : 'user';
    const content = toBlocks(m?.content);
    if (content.length === 0) continue;
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.content.push(...content);
    else messages.push({ role, content });
  }
  const inferenceConfig: Json = { maxTokens: body.max_tokens };
  if (typeof body.temperature === 'number') inferenceConfig.temperature = body.temperature;
  if (typeof body.top_p === 'number') inferenceConfig.topP = body.top_p;
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0)
    inferenceConfig.stopSequences = body.stop_sequences;
  const out: Json = { messages, inferenceConfig };
  const systemText = system.filter((t) => t !== '').join('\n\n');
  if (systemText !== '') out.system = [{ text: systemText }];
  const tools: Json[] = (Array.isArray(body.tools) ? body.tools : []).map((t: Json) => ({
    toolSpec: {
      name: t?.name,
      ...(t?.description ? { description: t.description } : {}),
      inputSchema: { json: t?.input_schema ?? { type: 'object', properties: {} } },
    },
  }));
  // Converse refuses toolUse and toolResult blocks without a toolConfig: a conversation that
  // carries earlier calls but offers no tools now declares the tools it used, schema-less.
  if (tools.length === 0) {
    const used = new Set<string>();
    for (const m of messages) for (const b of m.content as Json[]) if (b.toolUse) used.add(String(b.toolUse.name));
    for (const name of used) tools.push({ toolSpec: { name, inputSchema: { json: { type: 'object' } } } });
  }
  if (tools.length > 0) {
    out.toolConfig = { tools };
    const choice = toolChoiceOf(body.tool_choice);
    if (choice) out.toolConfig.toolChoice = choice;
  }
  return out;
}

/** A Converse answer as an Anthropic message. */
export function fromConverseResponse(body: Json, model: string, id: string): Json {
  const blocks = body.output?.message?.content;
  if (!Array.isArray(blocks)) throw new Error('not a Converse answer');
  const content = (blocks as Json[]).flatMap((b): Json[] => {
    if (typeof b?.text === 'string') return [{ type: 'text', text: b.text }];
    if (b?.toolUse)
      return [{ type: 'tool_use', id: b.toolUse.toolUseId, name: b.toolUse.name, input: b.toolUse.input ?? {} }];
    return [];
  });
  return {
    id: `msg_${id}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: anthropicStop(body.stopReason),
    stop_sequence: null,
    ...(converseUsage(body.usage) ? { usage: converseUsage(body.usage) } : {}),
  };
}

/** The AWS error type, from the header (`Type:namespace`) or the body. */
const errorType = (headers: Record<string, string | string[] | undefined>, body: Json | null): string => {
  const header = headers['x-amzn-errortype'];
  const raw = (Array.isArray(header) ? header[0] : header) ?? String(body?.__type ?? '');
  return raw.split(':')[0]!.split('#').pop() ?? '';
};

export const bedrock: VendorAdapter = {
  pivot: 'anthropic',
  async request(body, a) {
    const path = `/model/${encodeURIComponent(a.model.upstreamModel)}/${a.stream ? 'converse-stream' : 'converse'}`;
    const json = JSON.stringify({
      ...toConverseRequest(body),
      ...converseExtras(body, a.model.upstreamModel, a.anthropicBeta),
    });
    const headers = { traceparent: a.traceparent };
    const signed = await signedHeaders(a.provider, path, headers, json, new Date(a.nowSeconds * 1000));
    return { path, headers: signed, body: json };
  },
  fault(status, headers, body) {
    const type = errorType(headers, body);
    if (FAILOVER_TYPES.has(type))
      return { failure: `HTTP ${status} ${type}`, ...(type === 'ThrottlingException' ? { throttled: true } : {}) };
    const usual = usualFault(status);
    if (usual.failure !== null) return usual;
    const fallback = anthropicFallback(body);
    return fallback ? { failure: null, fallback } : usual;
  },
  answer: (body, a, id) => fromConverseResponse(body, a.clientModel, id),
  events: (body, a, id) => bedrockEvents(body, { clientModel: a.clientModel, id }),
};
