import { geminiUsageOf } from './cache-usage.js';
import type { Json } from './http.js';
import { compose, send, startLoopbackVendor, TOOL_INPUT, writePieces, type LoopbackVendor } from './loopback-vendor.js';

/**
 * Gemini's native API on loopback: `POST /v1beta/models/{model}:generateContent` and
 * `:streamGenerateContent?alt=sse`, the key in `x-goog-api-key`. A wrong or missing key is
 * answered as Google does: 400 INVALID_ARGUMENT with reason API_KEY_INVALID. The request is
 * checked as Gemini would: only its fields (and generationConfig's), by name, roles
 * `user`/`model`, a `functionResponse` must name a function the
 * conversation called, `functionDeclarations` need a name, and a replayed `functionCall` must
 * bring back the `thoughtSignature` the mock gave it, or the documented
 * `skip_thought_signature_validator` for a call Gemini did not make (Gemini 3's rule). Answers: candidates with parts
 * (`text` or a `functionCall`), `finishReason`, `usageMetadata`; a stream sends one
 * GenerateContentResponse per piece, the last with the finishReason and the usage.
 */
export const GEMINI_KEY = 'gemini-mock-key';
/** Every functionCall the mock answers carries this, and every replayed call must bring it back (as Gemini 3 demands). */
export const THOUGHT_SIGNATURE = 'bW9jay10aG91Z2h0LXNpZ25hdHVyZSsvPQ==';

const googleError = (code: number, status: string, message: string, reason?: string): Json => ({
  error: {
    code,
    message,
    status,
    ...(reason
      ? { details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com' }] }
      : {}),
  },
});

const STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

const partsText = (parts: unknown): string =>
  (Array.isArray(parts) ? parts : [])
    .map((p: Json) => (typeof p?.text === 'string' ? p.text : ''))
    .filter(Boolean)
    .join(' ');

/** GenerateContentRequest's fields and its generationConfig's; Google refuses any other name. */
const REQUEST_FIELDS = new Set([
  'contents',
  'tools',
  'toolConfig',
  'safetySettings',
  'systemInstruction',
  'generationConfig',
  'cachedContent',
  'labels',
]);
const GENERATION_FIELDS = new Set([
  'stopSequences',
  'responseMimeType',
  'responseSchema',
  'responseJsonSchema',
  'responseModalities',
  'candidateCount',
  'maxOutputTokens',
  'temperature',
  'topP',
  'topK',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'responseLogprobs',
  'logprobs',
  'enableEnhancedCivicAnswers',
  'speechConfig',
  'thinkingConfig',
  'imageConfig',
  'mediaResolution',
]);

function invalid(body: Json): string | null {
  const unknown = [
    ...Object.keys(body).filter((k) => !REQUEST_FIELDS.has(k)),
    ...Object.keys(body.generationConfig ?? {})
      .filter((k) => !GENERATION_FIELDS.has(k))
      .map((k) => `generation_config.${k}`),
  ];
  if (unknown.length > 0) return `Invalid JSON payload received. Unknown name "${unknown[0]}": Cannot find field.`;
  if (!Array.isArray(body.contents) || body.contents.length === 0) return '* contents: must not be empty';
  const called = new Set<string>();
  for (const c of body.contents as Json[]) {
    if (c?.role !== 'user' && c?.role !== 'model') return `Please use a valid role: user, model.`;
    if (!Array.isArray(c.parts) || c.parts.length === 0) return '* contents.parts: must not be empty';
    for (const p of c.parts as Json[]) {
      // The value Gemini documents for a call it did not make (another vendor's, in history).
      const skipped = p?.thoughtSignature === 'skip_thought_signature_validator';
      if (p?.functionCall && p.thoughtSignature !== THOUGHT_SIGNATURE && !skipped)
        return 'Function call is missing a thought_signature in functionCall parts.';
      if (p?.functionCall) called.add(String(p.functionCall.name));
      if (p?.functionResponse && !called.has(String(p.functionResponse.name)))
        return `* function response names ${String(p.functionResponse.name)}, which was not called`;
    }
  }
  for (const t of (body.tools ?? []) as Json[])
    for (const f of (t?.functionDeclarations ?? []) as Json[])
      if (typeof f?.name !== 'string' || f.name === '') return '* tools.function_declarations.name: required';
  return null;
}

export function startMockGemini(options: { key?: string } = {}): Promise<LoopbackVendor> {
  const key = options.key ?? GEMINI_KEY;
  return startLoopbackVendor({
    route(method, url) {
      const m = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(url.pathname);
      if (method !== 'POST' || !m) return null;
      if (m[2] === 'streamGenerateContent' && url.searchParams.get('alt') !== 'sse') return null;
      return { model: decodeURIComponent(m[1]!), stream: m[2] === 'streamGenerateContent' };
    },
    authenticate(x) {
      if (x.req.headers['x-goog-api-key'] === key && !x.url.searchParams.has('key')) return null;
      return {
        status: 400,
        body: googleError(
          400,
          'INVALID_ARGUMENT',
          'API key not valid. Please pass a valid API key.',
          'API_KEY_INVALID',
        ),
      };
    },
    error: (status) => ({
      status,
      body: googleError(status, STATUS[status] ?? 'UNKNOWN', `mock fault: status ${status}`),
    }),
    answer(x) {
      const body = x.body;
      const problem = invalid(body);
      if (problem) return send(x.res, { status: 400, body: googleError(400, 'INVALID_ARGUMENT', problem) });
      const contents = body.contents as Json[];
      const last = contents.at(-1)!;
      const lastUser = [...contents].reverse().find((c) => c.role === 'user' && partsText(c.parts) !== '');
      const reply = compose({
        promptText: [partsText(body.systemInstruction?.parts), ...contents.map((c) => partsText(c.parts))].join(' '),
        lastUserText: partsText(lastUser?.parts),
        endsWithUserText: last.role === 'user' && partsText(last.parts) !== '',
        toolName: body.tools?.[0]?.functionDeclarations?.[0]?.name,
        maxTokens: body.generationConfig?.maxOutputTokens,
        fault: x.fault,
      });
      const usageMetadata = geminiUsageOf(reply, x.fault?.kind === 'cache' ? x.fault.usage : undefined);
      const finishReason = reply.truncated ? 'MAX_TOKENS' : 'STOP';
      const response = (parts: Json[], last: boolean): Json => ({
        candidates: [
          {
            content: { role: 'model', parts },
            ...(last ? { finishReason } : {}),
            index: 0,
          },
        ],
        ...(last ? { usageMetadata } : { usageMetadata: { promptTokenCount: reply.promptTokens } }),
        modelVersion: x.model,
        responseId: 'gemini-mock',
      });
      const toolPart = reply.tool
        ? [{ functionCall: { name: reply.tool, args: reply.input ?? TOOL_INPUT }, thoughtSignature: THOUGHT_SIGNATURE }]
        : [];
      if (!x.stream)
        return send(x.res, {
          status: 200,
          body: response(reply.tool ? toolPart : [{ text: reply.pieces.join('') }], true),
        });
      const chunks: Json[] = reply.tool
        ? [response(toolPart, true)]
        : reply.pieces.map((piece, i) => response([{ text: piece }], i === reply.pieces.length - 1));
      if (chunks.length === 0) chunks.push(response([{ text: '' }], true));
      return writePieces(
        x,
        'text/event-stream',
        chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`),
      );
    },
  });
}
