import test from 'ava';
import { fromConverseResponse, toConverseRequest } from '../../src/gateway/vendors/bedrock.js';
import { fromGeminiResponse, toGeminiRequest } from '../../src/gateway/vendors/gemini.js';

/**
 * Known answers for the adapters' request and answer translation (vendors/gemini.ts,
 * vendors/bedrock.ts): what the vendor receives for a given body in our pivot shape, and what a
 * given vendor answer becomes. The suites (vendor-*.test.ts) run the same through the SDKs.
 */
const PNG = 'iVBORw0KGgo=';

test('gemini request: system, images, tool calls named back from their ids, tool choice, JSON mode', (t) => {
  const out = toGeminiRequest({
    model: 'gemini-2.5-flash',
    max_tokens: 100,
    temperature: 0.2,
    stop: 'END',
    response_format: { type: 'json_schema', json_schema: { name: 'r', schema: { type: 'object' } } },
    messages: [
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_9', content: '{"hits":3}' },
      { role: 'tool', tool_call_id: 'call_unknown', content: 'plain text' },
    ],
    tools: [{ type: 'function', function: { name: 'search', parameters: { type: 'object' } } }],
    tool_choice: { type: 'function', function: { name: 'search' } },
  });
  t.deepEqual(out, {
    systemInstruction: { parts: [{ text: 'Be brief.' }] },
    contents: [
      { role: 'user', parts: [{ text: 'look' }, { inlineData: { mimeType: 'image/png', data: PNG } }] },
      { role: 'model', parts: [{ functionCall: { name: 'search', args: { q: 'x' } } }] },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'search', response: { hits: 3 } } },
          { functionResponse: { name: 'call_unknown', response: { _raw: 'plain text' } } },
        ],
      },
    ],
    generationConfig: {
      maxOutputTokens: 100,
      temperature: 0.2,
      stopSequences: ['END'],
      responseMimeType: 'application/json',
      responseJsonSchema: { type: 'object' },
    },
    tools: [{ functionDeclarations: [{ name: 'search', parametersJsonSchema: { type: 'object' } }] }],
    toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['search'] } },
  });
});

test('gemini answer: text without thoughts, calls with ids, stop reasons, usage with thinking tokens', (t) => {
  const answer = fromGeminiResponse(
    {
      candidates: [
        {
          content: {
            role: 'model',
            parts: [
              { text: 'pondering', thought: true },
              { text: 'ok' },
              { functionCall: { name: 'f', args: { a: 1 } } },
            ],
          },
          finishReason: 'STOP',
        },
      ],
      usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 3, thoughtsTokenCount: 5 },
    },
    'flash',
    'abc',
    1000,
  );
  t.like(answer.choices[0], {
    message: { content: 'ok', tool_calls: [{ id: 'call_abc_0', function: { name: 'f', arguments: '{"a":1}' } }] },
    finish_reason: 'tool_calls',
  });
  t.deepEqual(answer.usage, {
    prompt_tokens: 7,
    completion_tokens: 8,
    total_tokens: 15,
    completion_tokens_details: { reasoning_tokens: 5 },
  });
  const blocked = fromGeminiResponse({ promptFeedback: { blockReason: 'SAFETY' } }, 'flash', 'abc', 1000);
  t.like(blocked.choices[0], { message: { content: '' }, finish_reason: 'content_filter' });
  const safety = fromGeminiResponse({ candidates: [{ finishReason: 'SAFETY' }] }, 'flash', 'abc', 1000);
  t.is(safety.choices[0].finish_reason, 'content_filter');
  t.throws(() => fromGeminiResponse({ hello: 1 }, 'flash', 'abc', 1000));
});

test('gemini thought signatures: carried in the tool call id and put back; a Gemini 3 replay without one gets the documented sentinel', (t) => {
  const signature = 'c2lnbmF0dXJlKy8/Pz8=';
  const answer = fromGeminiResponse(
    {
      candidates: [
        {
          content: { role: 'model', parts: [{ functionCall: { name: 'f', args: {} }, thoughtSignature: signature }] },
          finishReason: 'STOP',
        },
      ],
    },
    'flash',
    'abc',
    1000,
  );
  const id = answer.choices[0].message.tool_calls[0].id as string;
  t.regex(id, /^call_abc_0__ts_[A-Za-z0-9_-]+$/, 'the id stays in the characters every client accepts');
  const replay = (model: string, callId: string) =>
    toGeminiRequest({
      model,
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: callId, type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: callId, content: '{}' },
      ],
    }).contents[1].parts[0];
  t.is(replay('gemini-3-flash', id).thoughtSignature, signature);
  t.is(replay('gemini-3-flash', 'call_elsewhere').thoughtSignature, 'skip_thought_signature_validator');
  t.is(replay('gemini-2.5-flash', 'call_elsewhere').thoughtSignature, undefined);
});

test('converse request: system, images, tool use and results (errors marked), tool choice, blanks dropped', (t) => {
  const out = toConverseRequest({
    model: 'm',
    max_tokens: 50,
    system: [{ type: 'text', text: 'Be brief.' }],
    stop_sequences: ['END'],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: '' },
          { type: 'text', text: 'look' },
          { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: PNG } },
          { type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'tu_1', name: 'search', input: { q: 'x' } }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'tu_1', is_error: true, content: [{ type: 'text', text: 'boom' }] },
        ],
      },
      { role: 'user', content: 'and now?' },
    ],
    tools: [{ name: 'search', input_schema: { type: 'object' } }],
    tool_choice: { type: 'any' },
  });
  t.deepEqual(out, {
    system: [{ text: 'Be brief.' }],
    inferenceConfig: { maxTokens: 50, stopSequences: ['END'] },
    messages: [
      { role: 'user', content: [{ text: 'look' }, { image: { format: 'jpeg', source: { bytes: PNG } } }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: 'tu_1', name: 'search', input: { q: 'x' } } }] },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'tu_1', content: [{ text: 'boom' }], status: 'error' } },
          { text: 'and now?' },
        ],
      },
    ],
    toolConfig: {
      tools: [{ toolSpec: { name: 'search', inputSchema: { json: { type: 'object' } } } }],
      toolChoice: { any: {} },
    },
  });
});

test('converse request: earlier tool calls without tools offered now still declare those tools', (t) => {
  const out = toConverseRequest({
    max_tokens: 10,
    messages: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'tu_1', name: 'lookup', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: 'done' }] },
    ],
  });
  t.deepEqual(out.toolConfig, { tools: [{ toolSpec: { name: 'lookup', inputSchema: { json: { type: 'object' } } } }] });
});

test('converse answer: blocks, stop reasons (a guardrail is a refusal), usage', (t) => {
  const answer = fromConverseResponse(
    {
      output: {
        message: {
          role: 'assistant',
          content: [{ text: 'hi' }, { toolUse: { toolUseId: 't1', name: 'f', input: {} } }],
        },
      },
      stopReason: 'tool_use',
      usage: { inputTokens: 4, outputTokens: 6, totalTokens: 10 },
    },
    'haiku',
    'abc',
  );
  t.deepEqual(answer, {
    id: 'msg_abc',
    type: 'message',
    role: 'assistant',
    model: 'haiku',
    content: [
      { type: 'text', text: 'hi' },
      { type: 'tool_use', id: 't1', name: 'f', input: {} },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 4, output_tokens: 6 },
  });
  const guarded = fromConverseResponse(
    { output: { message: { content: [] } }, stopReason: 'guardrail_intervened' },
    'haiku',
    'abc',
  );
  t.is(guarded.stop_reason, 'refusal');
  t.throws(() => fromConverseResponse({ message: 'not an answer' }, 'haiku', 'abc'));
});
