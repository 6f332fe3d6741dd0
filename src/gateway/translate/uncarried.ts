import type { VendorJson as Json } from '../vendor-json.js';
import { isClaude, type RequestShape, type VendorKind } from './carry.js';

/**
 * What a vendor kind has no way to carry, field by field, for each request shape: read by
 * steps/carry.ts, which keeps the candidates whose kind can carry the request, else refuses it by
 * name (400 invalid_request, `errors` naming each field with why) before anything is sent. What
 * can be carried, and how, is carry.ts. A rule names the field, or the part of it at fault
 * (`tools.2`, `context_management.edits.0`) by beginning its message with that part.
 */

export interface Fault {
  field: string;
  message: string;
}

/** Why the field's value cannot be carried to `kind`, or null when it can. */
type Rule = (value: unknown, kind: VendorKind, body: Json, model: string) => string | null;

const isSet = (v: unknown): boolean =>
  v !== undefined &&
  v !== null &&
  !(Array.isArray(v) && v.length === 0) &&
  !(typeof v === 'object' && Object.keys(v as object).length === 0);

const ONLY_ANTHROPIC =
  (what: string): Rule =>
  (v, kind) =>
    isSet(v) && kind !== 'anthropic' ? `${what} is Anthropic's own: only an Anthropic-kind vendor can take it` : null;
const ONLY_OPENAI =
  (what: string): Rule =>
  (v, kind) =>
    isSet(v) && kind !== 'openai' && kind !== 'azure-openai'
      ? `${what} is OpenAI's own: only an OpenAI- or Azure-kind vendor can take it`
      : null;
/** A value other than the default (0, false, 1 for n), at a kind not in `takes`. */
const NOT_DEFAULT =
  (what: string, takes: VendorKind[], defaults: unknown[]): Rule =>
  (v, kind) =>
    isSet(v) && !defaults.includes(v) && !takes.includes(kind) && kind !== 'openai' && kind !== 'azure-openai'
      ? `${what} has no counterpart at a ${kind}-kind vendor`
      : null;

/** The Anthropic body's fields: what each translated kind cannot carry. */
const ANTHROPIC_RULES: Record<string, Rule> = {
  top_k: (v, kind, _b, model) =>
    typeof v === 'number' && (kind === 'openai' || kind === 'azure-openai' || (kind === 'bedrock' && !isClaude(model)))
      ? `top_k has no counterpart at this ${kind}-kind model (Gemini, Bedrock's Claude and Anthropic take it)`
      : null,
  thinking: (v, kind, _b, model) =>
    (v as Json)?.type === 'enabled' && kind === 'bedrock' && !isClaude(model)
      ? 'thinking (enabled) has no counterpart at a Bedrock model other than Claude'
      : null,
  context_management: (v, kind, _b, model) => {
    if (kind === 'anthropic' || (kind === 'bedrock' && isClaude(model))) return null;
    const edits = Array.isArray((v as Json)?.edits) ? ((v as Json).edits as Json[]) : [];
    const other = edits.findIndex((e) => !String(e?.type ?? '').startsWith('clear_thinking'));
    return other === -1
      ? null
      : `context_management.edits.${other} (${String(edits[other]?.type)}) is done by Anthropic's servers: no ${kind}-kind vendor can`;
  },
  container: ONLY_ANTHROPIC('container (code execution and skills)'),
  mcp_servers: ONLY_ANTHROPIC('mcp_servers (the MCP connector)'),
  compaction: ONLY_ANTHROPIC('compaction'),
  thread: ONLY_ANTHROPIC('thread'),
  fallbacks: ONLY_ANTHROPIC('fallbacks'),
  fallback_credit_token: ONLY_ANTHROPIC('fallback_credit_token'),
  billing_policy: ONLY_ANTHROPIC('billing_policy'),
  user_profile_id: ONLY_ANTHROPIC('user_profile_id'),
  workspace_id: ONLY_ANTHROPIC('workspace_id'),
  diagnostics: ONLY_ANTHROPIC('diagnostics'),
  inference_geo: ONLY_ANTHROPIC('inference_geo (where Anthropic runs the model; svc routes by jurisdiction)'),
  speed: (v, kind) =>
    isSet(v) && v !== 'standard' && kind !== 'anthropic' ? `speed ${String(v)} is Anthropic's own` : null,
  tool_choice: (v, kind) =>
    (v as Json)?.type === 'none' && kind === 'bedrock'
      ? 'tool_choice none has no counterpart at Bedrock (Converse offers tools without one): leave the tools out'
      : null,
  tools: (v, kind) => {
    if (kind === 'anthropic' || !Array.isArray(v)) return null;
    const i = (v as Json[]).findIndex((t) => t?.type !== undefined && t.type !== 'custom' && t.type !== null);
    return i === -1
      ? null
      : `tools.${i} (${String((v as Json[])[i]?.type)}) is a tool Anthropic runs: only custom tools can be offered to a ${kind}-kind vendor`;
  },
};

/** The chat-completions body's fields: what each translated kind cannot carry. */
const OPENAI_RULES: Record<string, Rule> = {
  audio: ONLY_OPENAI('audio output'),
  modalities: (v, kind) =>
    Array.isArray(v) && v.some((m) => m !== 'text') && kind !== 'openai' && kind !== 'azure-openai'
      ? "modalities other than text (audio output) are OpenAI's own"
      : null,
  functions: ONLY_OPENAI('functions (the deprecated form of tools; send tools)'),
  function_call: ONLY_OPENAI('function_call (the deprecated form of tool_choice; send tool_choice)'),
  logit_bias: ONLY_OPENAI('logit_bias'),
  logprobs: NOT_DEFAULT('logprobs', [], [false]),
  top_logprobs: NOT_DEFAULT('top_logprobs', [], [0]),
  prediction: ONLY_OPENAI('prediction (predicted outputs)'),
  moderation: ONLY_OPENAI('moderation'),
  web_search_options: ONLY_OPENAI('web_search_options (OpenAI runs the search)'),
  store: NOT_DEFAULT('store (stored completions)', [], [false]),
  metadata: ONLY_OPENAI('metadata (kept with stored completions)'),
  seed: NOT_DEFAULT('seed', ['gemini'], []),
  frequency_penalty: NOT_DEFAULT('frequency_penalty', ['gemini'], [0]),
  presence_penalty: NOT_DEFAULT('presence_penalty', ['gemini'], [0]),
  n: NOT_DEFAULT('n (more than one choice)', ['gemini'], [1]),
  tool_choice: (v, kind) =>
    v === 'none' && kind === 'bedrock'
      ? 'tool_choice none has no counterpart at Bedrock (Converse offers tools without one): leave the tools out'
      : null,
  service_tier: (v, kind) =>
    isSet(v) && v !== 'auto' && v !== 'default' && kind !== 'openai' && kind !== 'azure-openai'
      ? `service_tier ${String(v)} is OpenAI's own`
      : null,
  user: (v, kind, body) =>
    typeof v === 'string' &&
    typeof body.safety_identifier === 'string' &&
    v !== body.safety_identifier &&
    (kind === 'anthropic' || kind === 'bedrock')
      ? 'user differs from safety_identifier: this vendor takes one end-user id (metadata.user_id); send one of them'
      : null,
  // reasoning_effort: carried, or (a Bedrock model other than Claude) advisory, as carry.ts says.
};

/**
 * The fields of a client body in `shape` that a vendor of `kind` (model `model`) cannot carry,
 * each named with why; empty when it can carry them all.
 */
export function uncarried(shape: RequestShape, body: Json, kind: VendorKind, model: string): Fault[] {
  if (shape === kind || (shape === 'openai' && kind === 'azure-openai')) return [];
  const rules = shape === 'anthropic' ? ANTHROPIC_RULES : OPENAI_RULES;
  const faults: Fault[] = [];
  for (const [field, rule] of Object.entries(rules)) {
    if (!(field in body)) continue;
    const message = rule(body[field], kind, body, model);
    // A message that begins with a part of the field (`tools.2 …`) names that part.
    if (message) faults.push({ field: new RegExp(`^${field}\\.[\\w.]+`).exec(message)?.[0] ?? field, message });
  }
  return faults;
}

/** The Responses body's fields that chat completions cannot carry (beyond its tools and items). */
const RESPONSES_RULES: Record<string, Rule> = {
  context_management: (v) =>
    isSet(v) ? 'context_management (server-side compaction) needs a vendor that speaks Responses' : null,
  max_tool_calls: (v) => (isSet(v) ? 'max_tool_calls needs a vendor that speaks Responses' : null),
  moderation: (v) => (isSet(v) ? 'moderation needs a vendor that speaks Responses' : null),
  access_programs: (v) => (isSet(v) ? 'access_programs needs a vendor that speaks Responses' : null),
  image: (v) => (isSet(v) ? 'image needs a vendor that speaks Responses' : null),
  truncation: (v) =>
    v === 'auto' ? 'truncation auto (dropping the oldest items) needs a vendor that speaks Responses' : null,
};

/**
 * What a Responses body sent to a vendor asked in chat completions cannot carry: its own fields
 * (above), then those of the chat body it becomes (`chat`, translate/responses-api.ts) at `kind`.
 */
export function uncarriedResponses(body: Json, chat: Json, kind: VendorKind, model: string): Fault[] {
  const faults: Fault[] = [];
  for (const [field, rule] of Object.entries(RESPONSES_RULES)) {
    if (!(field in body)) continue;
    const message = rule(body[field], kind, body, model);
    if (message) faults.push({ field, message });
  }
  // The chat fields the Responses fields became, named as the client sent them.
  const named = (field: string): string =>
    field === 'logprobs'
      ? // top_logprobs 0 asks for nothing: then the ask came from include.
        typeof body.top_logprobs === 'number' && body.top_logprobs > 0
        ? 'top_logprobs'
        : 'include'
      : (RESPONSES_NAMES[field] ?? field);
  return [
    ...faults,
    ...uncarried('openai', chat, kind, model).map((f) => ({ field: named(f.field), message: f.message })),
  ];
}

const RESPONSES_NAMES: Record<string, string> = {
  reasoning_effort: 'reasoning.effort',
  response_format: 'text.format',
  verbosity: 'text.verbosity',
};
