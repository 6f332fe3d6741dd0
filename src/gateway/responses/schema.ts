import Joi from 'joi';

/**
 * The body of POST /v1/responses (OpenAI's Responses shape), checked whole: every field at fault
 * is listed (400 invalid_request). What the gateway can serve is accepted: input as a string or
 * items (messages with text and image parts, function calls and their outputs, reasoning items),
 * instructions, function tools, tool_choice, max_output_tokens, metadata, stream, and the
 * sampling and format settings. What it cannot is refused by name rather than dropped: audio and
 * file inputs, stored prompts, `background: true`. What only a vendor that speaks Responses can
 * take (`store: true`, `previous_response_id`, `conversation`, hosted tools such as web_search;
 * item types beyond messages, function and custom tool calls, their outputs, reasoning and
 * `additional_tools`) is accepted here and checked once the route is known
 * (steps/responses-state.ts): passed through to such a vendor, refused by name otherwise. Other
 * fields pass to a vendor that speaks Responses, and are not sent to one that is asked in chat
 * completions.
 */
const maxTokens = Joi.number().strict().integer().min(1).max(10_000_000);
/** The item types chat completions can carry; others need a vendor that speaks Responses. */
export const TRANSLATED_ITEM_TYPES: readonly string[] = [
  'message',
  'function_call',
  'function_call_output',
  'reasoning',
  'custom_tool_call',
  'custom_tool_call_output',
  'additional_tools',
];
/** The tool types chat completions can carry (a custom tool as a function of one string). */
export const TRANSLATED_TOOL_TYPES: readonly string[] = ['function', 'custom'];
const PART_TYPES = ['input_text', 'output_text', 'input_image', 'refusal'];

const ofType = (type: string) => Joi.object({ type: Joi.valid(type).required() }).unknown(true);
/** A string or an array: the array's own errors are listed (an alternatives' would hide them). */
const stringOr = (array: Joi.Schema) =>
  Joi.alternatives().conditional(Joi.array(), { then: array, otherwise: Joi.string().allow('') });

const part = Joi.alternatives().conditional(Joi.object({ type: Joi.valid('input_image') }).unknown(true), {
  then: Joi.object({
    type: Joi.valid('input_image').required(),
    image_url: Joi.string()
      .max(20_000_000)
      .required()
      .messages({ 'any.required': '{{#label}} is required: a URL or a data: URL (file_id images are not supported)' }),
    file_id: Joi.any()
      .forbidden()
      .messages({ 'any.unknown': '{{#label}} is not supported: send the image as image_url (a URL or a data: URL)' }),
    detail: Joi.string().valid('auto', 'low', 'high'),
  }).unknown(true),
  otherwise: Joi.object({
    type: Joi.string()
      .valid(...PART_TYPES)
      .required()
      .messages({
        'any.only': `{{#label}} must be one of ${PART_TYPES.join(', ')}: audio and file inputs are not supported`,
      }),
    text: Joi.when('type', {
      is: Joi.valid('input_text', 'output_text'),
      then: Joi.string().allow('').required(),
    }),
    refusal: Joi.when('type', { is: 'refusal', then: Joi.string().allow('').required() }),
  }).unknown(true),
});

const itemType = Joi.string().max(64);
const otherItem = Joi.object({ type: itemType.required() }).unknown(true);

const message = Joi.object({
  type: itemType,
  role: Joi.string().valid('user', 'assistant', 'system', 'developer').required(),
  content: stringOr(Joi.array().items(part).max(10_000)).required(),
}).unknown(true);

const functionCall = Joi.object({
  type: Joi.valid('function_call').required(),
  call_id: Joi.string().min(1).max(256).required(),
  name: Joi.string().min(1).max(256).required(),
  arguments: Joi.string().allow('').required(),
}).unknown(true);

const functionOutput = Joi.object({
  type: Joi.valid('function_call_output').required(),
  call_id: Joi.string().min(1).max(256).required(),
  output: stringOr(Joi.array().items(part).max(10_000)).required(),
}).unknown(true);

const reasoning = Joi.object({ type: Joi.valid('reasoning').required() }).unknown(true);

const item = Joi.alternatives().conditional(ofType('function_call'), {
  then: functionCall,
  otherwise: Joi.alternatives().conditional(ofType('function_call_output'), {
    then: functionOutput,
    otherwise: Joi.alternatives().conditional(ofType('reasoning'), {
      then: reasoning,
      otherwise: Joi.alternatives().conditional(Joi.object({ type: Joi.exist().invalid('message') }).unknown(true), {
        then: otherItem,
        otherwise: message,
      }),
    }),
  }),
});

const tool = Joi.object({
  type: Joi.string().max(64).required(),
  name: Joi.when('type', {
    is: 'function',
    then: Joi.string()
      .pattern(/^[A-Za-z0-9_-]{1,64}$/)
      .required()
      .messages({ 'string.pattern.base': '{{#label}} must be 1 to 64 letters, digits, _ or -' }),
  }),
  description: Joi.string().allow('', null),
  parameters: Joi.object().unknown(true).allow(null),
  strict: Joi.boolean().allow(null),
}).unknown(true);

const unsupported = (what: string) =>
  Joi.any()
    .forbidden()
    .messages({ 'any.unknown': `{{#label}} is not supported: ${what}` });

export const responsesSchema = Joi.object({
  model: Joi.string().max(256).required(),
  input: stringOr(Joi.array().items(item).min(1).max(10_000)).required(),
  instructions: Joi.string().allow('', null),
  tools: Joi.array().items(tool).max(1000).allow(null),
  tool_choice: Joi.alternatives(
    Joi.string().valid('auto', 'none', 'required'),
    Joi.object({ type: Joi.valid('function').required(), name: Joi.string().required() }).unknown(true),
  ).messages({
    'alternatives.match': '{{#label}} must be auto, none, required or a function choice (type function, with its name)',
  }),
  parallel_tool_calls: Joi.boolean().strict().allow(null),
  max_output_tokens: maxTokens.allow(null),
  metadata: Joi.object().pattern(Joi.string().max(64), Joi.string().allow('').max(512)).max(16).allow(null),
  stream: Joi.boolean().strict().allow(null),
  stream_options: Joi.object().unknown(true).allow(null),
  store: Joi.boolean().strict().allow(null),
  previous_response_id: Joi.string().max(256).allow(null),
  conversation: Joi.alternatives(Joi.string(), Joi.object().unknown(true)).allow(null),
  temperature: Joi.number().min(0).max(2).allow(null),
  top_p: Joi.number().min(0).max(1).allow(null),
  user: Joi.string().max(256),
  truncation: Joi.string().valid('auto', 'disabled').allow(null),
  reasoning: Joi.object({ effort: Joi.string().allow(null) })
    .unknown(true)
    .allow(null),
  text: Joi.object({
    format: Joi.object({
      type: Joi.string().valid('text', 'json_schema', 'json_object').required(),
      name: Joi.when('type', { is: 'json_schema', then: Joi.string().max(64).required() }),
      schema: Joi.when('type', { is: 'json_schema', then: Joi.object().unknown(true).required() }),
    }).unknown(true),
  })
    .unknown(true)
    .allow(null),
  include: Joi.array().items(Joi.string()).max(100).allow(null),
  background: Joi.boolean().strict().invalid(true).allow(null).messages({
    'any.invalid': '{{#label}}: true is not supported (no background responses): omit it, and stream the answer',
  }),
  audio: unsupported('audio output'),
  modalities: unsupported('audio output'),
  prompt: unsupported('stored prompt templates; send instructions and input'),
}).unknown(true);
