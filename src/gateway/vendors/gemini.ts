import { durationSeconds, openaiFallback, usualFault } from '../failover.js';
import { geminiGenerationExtras } from '../translate/carry.js';
import { safeJson } from '../translate/requests.js';
import type { VendorJson as Json } from '../vendor-json.js';
import { geminiEvents, geminiFinish, geminiUsage, readParts, SIGNATURE } from './gemini-stream.js';
import type { VendorAdapter } from './vendor.js';

export { geminiFinish, geminiUsage, readParts };

/**
 * Google Gemini, natively: `POST {baseUrl}/v1beta/models/{model}:generateContent`, and
 * `:streamGenerateContent?alt=sse` for a stream, with the key in the `x-goog-api-key` header
 * (never in the query string, where it would reach access logs). Translated through the OpenAI
 * shape:
 * - system and developer messages become `systemInstruction`; user turns `user` contents,
 *   assistant turns `model` contents; consecutive turns of one role are merged.
 * - Tool definitions become `functionDeclarations` (their JSON Schema as `parametersJsonSchema`),
 *   tool calls `functionCall` parts, tool results `functionResponse` parts named after the call
 *   they answer (Gemini matches results by name; the call's id is looked up in the conversation).
 * - Gemini's calls carry no id unless it gives one: each gets `call_{callId}_{n}`, unique per call.
 * - A call's `thoughtSignature` (Gemini 3 refuses a replayed call without it) travels in the tool
 *   call's id, after `__ts_`, base64url, and is put back on the call when the client replays it;
 *   a Gemini 3 call replayed without one (a conversation begun elsewhere) gets Google's documented
 *   `skip_thought_signature_validator` on the first call of its turn.
 * - `response_format` json_object / json_schema become `responseMimeType` (and `responseJsonSchema`).
 * - `finishReason` STOP is stop (tool_calls when the answer calls a tool), MAX_TOKENS length,
 *   SAFETY and the other blocks content_filter; thought parts are not answer text, but their
 *   tokens count as output (Google bills them so).
 *
 * Errors: the usual rule, and a 400 whose reason is API_KEY_INVALID (how Gemini answers a wrong
 * key) is the operator's credential refused, so it fails over like a 401; RESOURCE_EXHAUSTED is
 * throttling, and the wait its `google.rpc.RetryInfo` detail names (`retryDelay`, e.g. "30s") is
 * the vendor's retry-after; a 400 saying the input token count exceeds the maximum is the context
 * window (the profile's fallbacks).
 */

const partsOf = (content: unknown): Json[] => {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) return [];
  return content.flatMap((p: Json): Json[] => {
    if (p?.type === 'text') return typeof p.text === 'string' && p.text !== '' ? [{ text: p.text }] : [];
    if (p?.type === 'image_url') {
      const url = String(p.image_url?.url ?? '');
      const data = /^data:([^;]+);base64,(.*)$/s.exec(url);
      return [data ? { inlineData: { mimeType: data[1], data: data[2] } } : { fileData: { fileUri: url } }];
    }
    return [];
  });
};

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p: Json) => (typeof p?.text === 'string' ? p.text : '')).join('')
      : '';

function push(contents: Json[], role: 'user' | 'model', parts: Json[]): void {
  if (parts.length === 0) return;
  const last = contents[contents.length - 1];
  if (last && last.role === role) last.parts.push(...parts);
  else contents.push({ role, parts });
}

const toolConfigOf = (choice: unknown): Json | undefined => {
  if (choice === 'auto') return { functionCallingConfig: { mode: 'AUTO' } };
  if (choice === 'required') return { functionCallingConfig: { mode: 'ANY' } };
  if (choice === 'none') return { functionCallingConfig: { mode: 'NONE' } };
  const name = (choice as Json | null)?.function?.name;
  if (typeof name === 'string') return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [name] } };
  return undefined;
};

const SKIP_SIGNATURE = 'skip_thought_signature_validator';

/** The thought signature a tool call id carries, or null. */
const signatureOf = (id: unknown): string | null => {
  if (typeof id !== 'string') return null;
  const at = id.indexOf(SIGNATURE);
  return at === -1 ? null : Buffer.from(id.slice(at + SIGNATURE.length), 'base64url').toString('base64');
};

/** An OpenAI chat-completions body as a Gemini generateContent body. */
export function toGeminiRequest(body: Json): Json {
  const system: string[] = [];
  const contents: Json[] = [];
  const nameOfCall = new Map<string, string>();
  const gemini3 = /^gemini-3/.test(String(body.model ?? ''));
  for (const m of (Array.isArray(body.messages) ? body.messages : []) as Json[]) {
    if (m.role === 'system' || m.role === 'developer') system.push(textOf(m.content));
    else if (m.role === 'user') push(contents, 'user', partsOf(m.content));
    else if (m.role === 'assistant') {
      const parts = partsOf(m.content);
      let first = true;
      for (const call of (Array.isArray(m.tool_calls) ? m.tool_calls : []) as Json[]) {
        const name = String(call?.function?.name ?? '');
        if (typeof call?.id === 'string') nameOfCall.set(call.id, name);
        const signature = signatureOf(call?.id) ?? (first && gemini3 ? SKIP_SIGNATURE : null);
        first = false;
        parts.push({
          functionCall: { name, args: safeJson(call?.function?.arguments) },
          ...(signature ? { thoughtSignature: signature } : {}),
        });
      }
      push(contents, 'model', parts);
    } else if (m.role === 'tool') {
      const name = nameOfCall.get(String(m.tool_call_id)) ?? String(m.tool_call_id ?? '');
      const text = textOf(m.content);
      const parsed = safeJson(text);
      const response = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : { result: parsed };
      push(contents, 'user', [{ functionResponse: { name, response } }]);
    }
  }
  const generationConfig: Json = { maxOutputTokens: body.max_completion_tokens ?? body.max_tokens };
  if (typeof body.temperature === 'number') generationConfig.temperature = body.temperature;
  if (typeof body.top_p === 'number') generationConfig.topP = body.top_p;
  if (body.stop !== undefined && body.stop !== null)
    generationConfig.stopSequences = Array.isArray(body.stop) ? body.stop : [body.stop];
  const format = body.response_format;
  if (format?.type === 'json_object') generationConfig.responseMimeType = 'application/json';
  if (format?.type === 'json_schema' && format.json_schema?.schema) {
    generationConfig.responseMimeType = 'application/json';
    generationConfig.responseJsonSchema = format.json_schema.schema;
  }
  // Thinking, topK, seed, penalties, candidates: translate/carry.ts.
  Object.assign(generationConfig, geminiGenerationExtras(body));
  const out: Json = { contents, generationConfig };
  if (system.length > 0) out.systemInstruction = { parts: [{ text: system.join('\n\n') }] };
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    out.tools = [
      {
        functionDeclarations: body.tools.map((t: Json) => ({
          name: t?.function?.name,
          ...(t?.function?.description ? { description: t.function.description } : {}),
          parametersJsonSchema: t?.function?.parameters ?? { type: 'object', properties: {} },
        })),
      },
    ];
    const config = toolConfigOf(body.tool_choice);
    if (config) out.toolConfig = config;
  }
  return out;
}

/** A Gemini GenerateContentResponse as an OpenAI chat completion. */
export function fromGeminiResponse(body: Json, model: string, id: string, nowSeconds: number): Json {
  if (!Array.isArray(body.candidates) && !body.promptFeedback) throw new Error('not a GenerateContentResponse');
  const candidate = (body.candidates?.[0] ?? {}) as Json;
  const { text, calls } = readParts(candidate.content?.parts, id, { calls: 0 });
  const blocked = !Array.isArray(body.candidates) || body.candidates.length === 0;
  return {
    id: `chatcmpl-${id}`,
    object: 'chat.completion',
    created: nowSeconds,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          ...(calls.length > 0 ? { tool_calls: calls.map(({ index: _index, ...c }) => c) } : {}),
          refusal: null,
        },
        finish_reason: blocked ? 'content_filter' : (geminiFinish(candidate.finishReason, calls.length > 0) ?? 'stop'),
        logprobs: null,
      },
    ],
    ...(geminiUsage(body.usageMetadata) ? { usage: geminiUsage(body.usageMetadata) } : {}),
  };
}

const details = (body: Json | null): Json[] => (Array.isArray(body?.error?.details) ? body.error.details : []);

const errorReasons = (body: Json | null): string[] =>
  details(body)
    .map((d: Json) => d?.reason)
    .filter((r: unknown): r is string => typeof r === 'string');

/** The wait a google.rpc.RetryInfo detail names, in seconds. */
const retryDelay = (body: Json | null): string | undefined =>
  durationSeconds(details(body).find((d) => String(d?.['@type'] ?? '').endsWith('google.rpc.RetryInfo'))?.retryDelay);

export const gemini: VendorAdapter = {
  pivot: 'openai',
  request(body, a) {
    const model = encodeURIComponent(a.model.upstreamModel);
    return {
      path: `/v1beta/models/${model}:${a.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
      headers: { 'x-goog-api-key': a.provider.apiKey ?? '', traceparent: a.traceparent },
      body: JSON.stringify(toGeminiRequest(body)),
    };
  },
  fault(status, _headers, body) {
    const reasons = errorReasons(body);
    const wait = retryDelay(body);
    const waits = wait !== undefined ? { retryAfter: wait } : {};
    if (reasons.some((r) => r === 'API_KEY_INVALID' || r === 'API_KEY_SERVICE_BLOCKED'))
      return { failure: `HTTP ${status} ${reasons.join(' ')}` };
    if (body?.error?.status === 'RESOURCE_EXHAUSTED')
      return { failure: `HTTP ${status} RESOURCE_EXHAUSTED`, throttled: true, ...waits };
    if (body?.error?.status === 'UNAVAILABLE') return { failure: `HTTP ${status} UNAVAILABLE`, ...waits };
    const usual = usualFault(status);
    if (usual.failure !== null) return { ...usual, ...waits };
    const message = String(body?.error?.message ?? '');
    if (/input token count.*exceeds the maximum/i.test(message)) return { failure: null, fallback: 'context_window' };
    const fallback = openaiFallback(body);
    return fallback ? { failure: null, fallback } : usual;
  },
  answer: (body, a, id) => fromGeminiResponse(body, a.clientModel, id, a.nowSeconds),
  events: (body, a, id) => geminiEvents(body, { clientModel: a.clientModel, id, created: a.nowSeconds }),
};
