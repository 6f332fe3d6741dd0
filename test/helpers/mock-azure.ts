import { openaiUsageOf } from './cache-usage.js';
import type { Json } from './http.js';
import { toolIdTooLong } from './mock-vendor.js';
import { compose, send, startLoopbackVendor, TOOL_INPUT, writePieces, type LoopbackVendor } from './loopback-vendor.js';

/**
 * Azure OpenAI on loopback: `POST /openai/deployments/{deployment}/chat/completions?api-version=V`
 * with the key in `api-key` (401 otherwise, Azure's body); an unknown api-version is 404
 * "Resource not found", as Azure answers. Calls are counted by deployment. Answers name the
 * underlying model (`gpt-4o-2024-08-06`), as Azure does; a stream starts with Azure's
 * prompt-filter chunk (no choices) and sends usage only when asked.
 */
export const AZURE_KEY = 'azure-mock-key';
export const AZURE_API_VERSION = '2024-10-21';

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p: Json) => (typeof p?.text === 'string' ? p.text : '')).join(' ')
      : '';

export function startMockAzure(options: { key?: string } = {}): Promise<LoopbackVendor> {
  const key = options.key ?? AZURE_KEY;
  return startLoopbackVendor({
    route(method, url) {
      const m = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/.exec(url.pathname);
      return method === 'POST' && m ? { model: decodeURIComponent(m[1]!), stream: false } : null;
    },
    authenticate(x) {
      if (x.url.searchParams.get('api-version') !== AZURE_API_VERSION)
        return { status: 404, body: { error: { code: '404', message: 'Resource not found' } } };
      if (x.req.headers['api-key'] !== key)
        return {
          status: 401,
          body: {
            error: {
              code: '401',
              message:
                'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
            },
          },
        };
      return null;
    },
    error: (status) => ({
      status,
      body: { error: { code: status === 429 ? '429' : String(status), message: `mock fault: status ${status}` } },
      ...(status === 429 ? { headers: { 'retry-after': '1' } } : {}),
    }),
    answer(x) {
      const body = x.body;
      if (!Array.isArray(body.messages) || body.messages.length === 0)
        return send(x.res, {
          status: 400,
          body: { error: { code: 'BadRequest', message: "'messages' is a required property" } },
        });
      const messages = body.messages as Json[];
      // Azure refuses an over-long tool-call id as OpenAI does.
      const tooLong = toolIdTooLong(messages);
      if (tooLong) return send(x.res, { status: 400, body: tooLong });
      const last = messages.at(-1);
      const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
      const reply = compose({
        promptText: messages.map((m) => textOf(m?.content)).join(' '),
        lastUserText: textOf(lastUser?.content),
        endsWithUserText: last?.role === 'user',
        toolName: body.tools?.[0]?.function?.name,
        maxTokens: body.max_completion_tokens ?? body.max_tokens,
      });
      const usage = openaiUsageOf(reply, x.fault?.kind === 'cache' ? x.fault.usage : undefined);
      const finish = reply.tool ? 'tool_calls' : reply.truncated ? 'length' : 'stop';
      const head = { id: 'chatcmpl-azure', created: 1_700_000_000, model: 'gpt-4o-2024-08-06' };
      const call = reply.tool
        ? {
            id: 'call_azure_1',
            type: 'function',
            function: { name: reply.tool, arguments: JSON.stringify(TOOL_INPUT) },
          }
        : null;
      if (body.stream !== true)
        return send(x.res, {
          status: 200,
          body: {
            ...head,
            object: 'chat.completion',
            choices: [
              {
                index: 0,
                message: {
                  role: 'assistant',
                  content: call ? null : reply.pieces.join(''),
                  ...(call ? { tool_calls: [call] } : {}),
                },
                finish_reason: finish,
                content_filter_results: {},
              },
            ],
            usage,
            prompt_filter_results: [{ prompt_index: 0, content_filter_results: {} }],
          },
        });
      const chunk = (delta: Json, finishReason: string | null = null) => ({
        ...head,
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta, finish_reason: finishReason }],
      });
      const events: Json[] = [
        { id: '', object: '', created: 0, model: '', choices: [], prompt_filter_results: [{ prompt_index: 0 }] },
        chunk({ role: 'assistant', content: '' }),
      ];
      if (call) events.push(chunk({ tool_calls: [{ index: 0, ...call }] }));
      for (const piece of reply.pieces) events.push(chunk({ content: piece }));
      events.push(chunk({}, finish));
      if (body.stream_options?.include_usage === true)
        events.push({ ...head, object: 'chat.completion.chunk', choices: [], usage });
      const lines = events.map((e) => `data: ${JSON.stringify(e)}\n\n`);
      lines.push('data: [DONE]\n\n');
      return writePieces(x, 'text/event-stream', lines);
    },
  });
}
