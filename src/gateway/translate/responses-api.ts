import type { VendorJson as Json } from '../vendor-json.js';
import { sseEvent, type SseEvent } from '../sse.js';
import { DEFAULT_MAX_TOKENS } from './requests.js';
import { openaiUsage, type Usage } from './responses.js';
import { customAsFunction, customInput, flatName, namespacedTools, offeredTools } from './responses-tools.js';

/**
 * The OpenAI Responses API (POST /v1/responses) to and from chat completions, for a vendor that
 * does not speak Responses (an Anthropic-kind one is reached through chat completions, which
 * forward.ts translates on). Rules:
 * - `instructions` becomes the first (system) message; an input string is one user message.
 *   Input items: messages (input_text/output_text parts as text, input_image as image_url),
 *   function_call items as the assistant's tool_calls (consecutive calls in one message), and
 *   function_call_output items as tool messages. Reasoning items are the vendor's own state
 *   and are not sent to a vendor that cannot read them.
 * - Function tools (a namespace's as `<namespace>__<name>`, its calls answered with `namespace`
 *   and `name` again), also those of `additional_tools` input items (how Codex offers its
 *   tools); custom tools as functions of one string argument, `input` (their calls answered as
 *   custom_tool_call items with that input; custom_tool_call and its output items sent as a
 *   tool call and a tool message); tool_choice, max_output_tokens (DEFAULT_MAX_TOKENS when absent, so that a
 *   budget's reservation bounds the call), temperature, top_p, parallel_tool_calls, user,
 *   reasoning.effort, text.format (json_schema, json_object), text.verbosity, top_logprobs and
 *   the prompt-cache, end-user and service-tier fields carry over (carry.ts says where each
 *   goes beyond OpenAI). Validation refused
 *   everything the translation cannot carry (schemas.ts in responses/).
 * - The answer is a `response` object: a message item with the text, one function_call item per
 *   tool call, usage in Responses' names; a length stop is status `incomplete` with reason
 *   max_output_tokens. The request's own settings are echoed as the API does.
 * - A stream becomes the Responses event sequence: response.created, response.in_progress, then
 *   per output item output_item.added, (content_part.added, output_text.delta..., output_text.done,
 *   content_part.done | function_call_arguments.delta..., function_call_arguments.done),
 *   output_item.done; then response.completed (or response.incomplete) with usage. Every event
 *   carries its sequence_number.
 */

const textOfParts = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p: Json) => (typeof p?.text === 'string' ? p.text : typeof p?.refusal === 'string' ? p.refusal : ''))
    .join('');
};

function chatParts(content: Json[]): Json[] {
  return content.map((p): Json => {
    if (p.type === 'input_image')
      return { type: 'image_url', image_url: { url: p.image_url, ...(p.detail ? { detail: p.detail } : {}) } };
    return { type: 'text', text: typeof p.text === 'string' ? p.text : String(p.refusal ?? '') };
  });
}

/** A Responses request body as a chat-completions body (the model name is the caller's to set). */
export function responsesToChatRequest(body: Json): Json {
  const messages: Json[] = [];
  if (typeof body.instructions === 'string' && body.instructions !== '')
    messages.push({ role: 'system', content: body.instructions });
  if (typeof body.input === 'string') messages.push({ role: 'user', content: body.input });
  else {
    for (const item of body.input as Json[]) {
      const type = item.type ?? 'message';
      if (type === 'message') {
        const role = item.role;
        if (typeof item.content === 'string') messages.push({ role, content: item.content });
        else if (role === 'user') messages.push({ role, content: chatParts(item.content) });
        else messages.push({ role, content: textOfParts(item.content) });
      } else if (type === 'function_call') {
        const call = {
          id: item.call_id,
          type: 'function',
          function: {
            name: flatName(item.namespace, item.name),
            arguments: typeof item.arguments === 'string' ? item.arguments : '',
          },
        };
        const last = messages[messages.length - 1];
        if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
        else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
      } else if (type === 'custom_tool_call') {
        // A custom tool is offered as a function of one string argument, `input`.
        const call = {
          id: item.call_id,
          type: 'function',
          function: {
            name: flatName(item.namespace, item.name),
            arguments: JSON.stringify({ input: typeof item.input === 'string' ? item.input : '' }),
          },
        };
        const last = messages[messages.length - 1];
        if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
        else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
      } else if (type === 'function_call_output' || type === 'custom_tool_call_output') {
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: textOfParts(item.output) });
      }
      // reasoning: the vendor's own state, not readable by another vendor (see above).
      // additional_tools: its tools are offered with the request's (offeredTools).
    }
  }
  const out: Json = {
    model: body.model,
    messages,
    max_completion_tokens: body.max_output_tokens ?? DEFAULT_MAX_TOKENS,
  };
  if (typeof body.temperature === 'number') out.temperature = body.temperature;
  if (typeof body.top_p === 'number') out.top_p = body.top_p;
  if (typeof body.user === 'string') out.user = body.user;
  if (typeof body.reasoning?.effort === 'string') out.reasoning_effort = body.reasoning.effort;
  // The same fields in chat completions (carry.ts says where each goes beyond OpenAI).
  for (const field of [
    'prompt_cache_key',
    'prompt_cache_options',
    'prompt_cache_retention',
    'safety_identifier',
    'service_tier',
  ])
    if (body[field] != null) out[field] = body[field];
  if (typeof body.text?.verbosity === 'string') out.verbosity = body.text.verbosity;
  if (Array.isArray(body.include) && body.include.includes('message.output_text.logprobs')) out.logprobs = true;
  if (typeof body.top_logprobs === 'number' && body.top_logprobs > 0) {
    out.logprobs = true;
    out.top_logprobs = body.top_logprobs;
  }
  const format = body.text?.format;
  if (format?.type === 'json_schema')
    out.response_format = {
      type: 'json_schema',
      json_schema: {
        name: format.name,
        schema: format.schema,
        ...(format.description ? { description: format.description } : {}),
        ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}),
      },
    };
  else if (format?.type === 'json_object') out.response_format = { type: 'json_object' };
  const offered = offeredTools(body);
  if (offered.length > 0) {
    // A namespace is a group of function tools: each is offered on its own, under its flat name.
    const functions = offered.flatMap((t): Json[] =>
      t.type === 'namespace' ? ((t.tools ?? []) as Json[]).map((m) => ({ ...m, name: flatName(t.name, m.name) })) : [t],
    );
    out.tools = functions.map((t: Json) => ({
      type: 'function',
      function:
        t.type === 'custom'
          ? customAsFunction(t)
          : {
              name: t.name,
              ...(t.description ? { description: t.description } : {}),
              parameters: t.parameters ?? { type: 'object', properties: {} },
              ...(typeof t.strict === 'boolean' ? { strict: t.strict } : {}),
            },
    }));
    if (typeof body.parallel_tool_calls === 'boolean') out.parallel_tool_calls = body.parallel_tool_calls;
    const choice = body.tool_choice;
    if (typeof choice === 'string') out.tool_choice = choice;
    else if (choice?.type === 'function') out.tool_choice = { type: 'function', function: { name: choice.name } };
  }
  if (body.stream === true) {
    out.stream = true;
    // The client's usage arrives in response.completed: always asked of the chat stream.
    out.stream_options = { include_usage: true };
  }
  return out;
}

/** Usage as the Responses API names it: input_tokens counts the cache's tokens, cached_tokens those read. */
export function responsesUsage(usage: Usage | null): Json | null {
  if (!usage) return null;
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
    total_tokens: usage.input + usage.output,
  };
}

export interface ResponseIds {
  /** The call's own id part: the response is resp_<id>, its items msg_<id>, fc_<id>_<n>. */
  id: string;
  model: string;
  createdAt: number;
}

/** The `response` object's fields that echo the request, with output and usage to fill. */
export function responseEnvelope(request: Json, ids: ResponseIds, status: string): Json {
  return {
    id: `resp_${ids.id}`,
    object: 'response',
    created_at: ids.createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    model: ids.model,
    output: [],
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: request.reasoning?.effort ?? null, summary: null },
    store: false,
    temperature: request.temperature ?? 1,
    text: request.text ?? { format: { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: request.tools ?? [],
    top_p: request.top_p ?? 1,
    truncation: request.truncation ?? 'disabled',
    usage: null,
    user: request.user ?? null,
  };
}

const INCOMPLETE: Record<string, string> = { length: 'max_output_tokens', content_filter: 'content_filter' };

const messageItem = (id: string, text: string, status: string): Json => ({
  id,
  type: 'message',
  status,
  role: 'assistant',
  content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
});

type CallItem = (id: string, callId: string, name: string, args: string, status: string) => Json;

/** The function_call items of an answer to `request`: a namespaced tool's call named as it was offered. */
const callItems = (request: Json): CallItem => {
  const named = namespacedTools(request);
  return (id, callId, name, args, status) => {
    const ns = named.get(name);
    const tool = ns ? { ...(ns.namespace ? { namespace: ns.namespace } : {}), name: ns.name } : { name };
    if (ns?.custom) return { id, type: 'custom_tool_call', status, call_id: callId, ...tool, input: customInput(args) };
    return { id, type: 'function_call', status, call_id: callId, ...tool, arguments: args };
  };
};

/** A whole chat completion (in the client's model name already) as a `response` object. */
export function chatToResponse(completion: Json, request: Json, ids: ResponseIds, usage: Usage | null): Json {
  const choice = (completion.choices?.[0] ?? {}) as Json;
  const message = (choice.message ?? {}) as Json;
  const incomplete = INCOMPLETE[choice.finish_reason as string];
  const response = responseEnvelope(request, ids, incomplete ? 'incomplete' : 'completed');
  const output: Json[] = [];
  if (typeof message.content === 'string' && message.content !== '')
    output.push(messageItem(`msg_${ids.id}`, message.content, 'completed'));
  if (typeof message.refusal === 'string' && message.refusal !== '')
    output.push({
      id: `msg_${ids.id}_refusal`,
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'refusal', refusal: message.refusal }],
    });
  const calls = (Array.isArray(message.tool_calls) ? message.tool_calls : []) as Json[];
  const callItem = callItems(request);
  calls.forEach((call, n) => {
    output.push(
      callItem(
        `fc_${ids.id}_${n}`,
        String(call.id ?? `call_${n}`),
        String(call.function?.name ?? ''),
        String(call.function?.arguments ?? ''),
        'completed',
      ),
    );
  });
  response.output = output;
  if (incomplete) response.incomplete_details = { reason: incomplete };
  response.usage = responsesUsage(usage);
  return response;
}

const parse = (data: string): Json | null => {
  try {
    const v = JSON.parse(data);
    return v && typeof v === 'object' ? (v as Json) : null;
  } catch {
    return null;
  }
};

/** Reads the gateway's own chat-completion chunks (client shape) and writes Responses events. */
export interface ResponsesStreamTranslator {
  event(e: SseEvent): string;
  /** An `error` event for a stream that did not finish (then the client's stream ends). */
  fail(message: string): string;
  readonly finished: boolean;
}

export function chatToResponsesStream(request: Json, ids: ResponseIds): ResponsesStreamTranslator {
  const callItem = callItems(request);
  const named = namespacedTools(request);
  let seq = 0;
  const emit = (type: string, fields: Json): string => sseEvent(type, { type, sequence_number: seq++, ...fields });
  const state = {
    started: false,
    finished: false,
    finish: null as string | null,
    usage: null as Usage | null,
  };
  const output: Json[] = [];
  // The item being written: text, or one tool call (by the chunk's tool-call index).
  let open:
    | { kind: 'text'; index: number; id: string; text: string }
    | { kind: 'call'; index: number; id: string; callId: string; name: string; args: string; tool: number }
    | null = null;
  let calls = 0;

  const start = (): string => {
    if (state.started) return '';
    state.started = true;
    const response = responseEnvelope(request, ids, 'in_progress');
    return emit('response.created', { response }) + emit('response.in_progress', { response });
  };
  const close = (): string => {
    if (!open) return '';
    let out = '';
    if (open.kind === 'text') {
      const item = messageItem(open.id, open.text, 'completed');
      const part = item.content[0];
      out += emit('response.output_text.done', {
        item_id: open.id,
        output_index: open.index,
        content_index: 0,
        text: open.text,
        logprobs: [],
      });
      out += emit('response.content_part.done', { item_id: open.id, output_index: open.index, content_index: 0, part });
      out += emit('response.output_item.done', { output_index: open.index, item });
      output.push(item);
    } else {
      const item = callItem(open.id, open.callId, open.name, open.args, 'completed');
      if (item.type === 'custom_tool_call') {
        // A custom call's input is known whole only once its JSON arguments are.
        const at = { item_id: open.id, output_index: open.index };
        out += emit('response.custom_tool_call_input.delta', { ...at, delta: item.input });
        out += emit('response.custom_tool_call_input.done', { ...at, input: item.input });
      } else
        out += emit('response.function_call_arguments.done', {
          item_id: open.id,
          output_index: open.index,
          name: item.name,
          arguments: open.args,
        });
      out += emit('response.output_item.done', { output_index: open.index, item });
      output.push(item);
    }
    open = null;
    return out;
  };
  const text = (piece: string): string => {
    let out = '';
    if (open?.kind !== 'text') {
      out += close();
      open = { kind: 'text', index: output.length, id: `msg_${ids.id}`, text: '' };
      out += emit('response.output_item.added', {
        output_index: open.index,
        item: { ...messageItem(open.id, '', 'in_progress'), content: [] },
      });
      out += emit('response.content_part.added', {
        item_id: open.id,
        output_index: open.index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      });
    }
    open.text += piece;
    return (
      out +
      emit('response.output_text.delta', {
        item_id: open.id,
        output_index: open.index,
        content_index: 0,
        delta: piece,
        logprobs: [],
      })
    );
  };
  const call = (c: Json): string => {
    let out = '';
    const tool = typeof c.index === 'number' ? c.index : 0;
    if (open?.kind !== 'call' || open.tool !== tool) {
      out += close();
      const n = calls++;
      open = {
        kind: 'call',
        index: output.length,
        id: `fc_${ids.id}_${n}`,
        callId: typeof c.id === 'string' ? c.id : `call_${n}`,
        name: typeof c.function?.name === 'string' ? c.function.name : '',
        args: '',
        tool,
      };
      out += emit('response.output_item.added', {
        output_index: open.index,
        item: callItem(open.id, open.callId, open.name, '', 'in_progress'),
      });
    }
    const piece = c.function?.arguments;
    if (typeof piece === 'string' && piece !== '') {
      open.args += piece;
      if (named.get(open.name)?.custom) return out;
      out += emit('response.function_call_arguments.delta', {
        item_id: open.id,
        output_index: open.index,
        delta: piece,
      });
    }
    return out;
  };
  const complete = (): string => {
    let out = start() + close();
    const incomplete = INCOMPLETE[state.finish ?? ''];
    const response = responseEnvelope(request, ids, incomplete ? 'incomplete' : 'completed');
    response.output = output;
    if (incomplete) response.incomplete_details = { reason: incomplete };
    response.usage = responsesUsage(state.usage);
    out += emit(incomplete ? 'response.incomplete' : 'response.completed', { response });
    return out;
  };

  return {
    event(e) {
      if (state.finished) return '';
      if (e.data === '[DONE]') {
        state.finished = true;
        return complete();
      }
      const chunk = parse(e.data);
      if (!chunk) return '';
      let out = start();
      state.usage = openaiUsage(chunk.usage) ?? state.usage;
      const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
      if (!choice || typeof choice !== 'object') return out;
      const delta = (choice.delta ?? {}) as Json;
      if (typeof delta.content === 'string' && delta.content !== '') out += text(delta.content);
      if (typeof delta.refusal === 'string' && delta.refusal !== '') out += text(delta.refusal);
      if (Array.isArray(delta.tool_calls))
        for (const c of delta.tool_calls as Json[]) if (c && typeof c === 'object') out += call(c);
      if (typeof choice.finish_reason === 'string') state.finish = choice.finish_reason;
      return out;
    },
    fail(message) {
      if (state.finished) return '';
      state.finished = true;
      return emit('error', { code: 'upstream_failure', message, param: null });
    },
    get finished() {
      return state.finished;
    },
  };
}
