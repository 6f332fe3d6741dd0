import { AppError } from '../../errors/app-error.js';
import { speaksResponses } from '../responses/attempt.js';
import { TRANSLATED_ITEM_TYPES, TRANSLATED_TOOL_TYPES } from '../responses/schema.js';
import type { VendorJson as Json } from '../vendor-json.js';
import type { SyncStep } from './context.js';

/**
 * Responses state and Responses-only features (POST /v1/responses only). What only a vendor
 * that speaks Responses (`responses: true`) can take keeps the candidates to models at such a
 * provider, where it passes through as it is; with none, 400 invalid_request names each field and
 * the fix. That is: `store: true`, `previous_response_id` and `conversation` (a vendor that keeps
 * responses; or send the whole conversation in `input`, without store), tools other than function
 * and custom tools, alone or in a namespace, in `tools` or an `additional_tools` item (hosted
 * tools such as web_search), and input items other than messages, function and custom tool
 * calls, their outputs, reasoning and `additional_tools` (hosted tool calls), which chat
 * completions has no way to carry.
 */
const STATEFUL = ['store', 'previous_response_id', 'conversation'] as const;

interface Fault {
  field: string;
  message: string;
}

/** The tools and items of the body that need a vendor that speaks Responses. */
function responsesOnly(body: Json): Fault[] {
  const faults: Fault[] = [];
  const fault = (field: string, type: unknown) =>
    faults.push({
      field,
      message: `${field} is ${String(type)}: only function and custom tools, alone or in a namespace, can be translated for a vendor that does not speak Responses`,
    });
  const check = (tools: unknown, at: string) =>
    ((Array.isArray(tools) ? tools : []) as Json[]).forEach((t, i) => {
      // A namespace of function tools is carried (each under its flat name, translate/responses-api.ts).
      if (t?.type === 'namespace')
        ((Array.isArray(t.tools) ? t.tools : []) as Json[]).forEach((m, j) => {
          if (!TRANSLATED_TOOL_TYPES.includes(m?.type)) fault(`${at}.${i}.tools.${j}.type`, m?.type);
        });
      else if (!TRANSLATED_TOOL_TYPES.includes(t?.type)) fault(`${at}.${i}.type`, t?.type);
    });
  check(body.tools, 'tools');
  const input: Json[] = Array.isArray(body.input) ? body.input : [];
  // Codex offers its tools in additional_tools items: carried as the request's own.
  input.forEach((item, i) => {
    if (item?.type === 'additional_tools') check(item.tools, `input.${i}.tools`);
  });
  input.forEach((item, i) => {
    const type = item?.type ?? 'message';
    if (!TRANSLATED_ITEM_TYPES.includes(type))
      faults.push({
        field: `input.${i}.type`,
        message: `input.${i}.type is ${String(type)}: only messages, function calls, their outputs and reasoning can be translated for a vendor that does not speak Responses`,
      });
  });
  return faults;
}

export const responsesState: SyncStep = {
  name: 'responses-state',
  run(ctx, env) {
    if (ctx.req.shape !== 'responses') return;
    const { body } = ctx;
    const asked = STATEFUL.filter((f) => (f === 'store' ? body.store === true : body[f] != null));
    const only = responsesOnly(body);
    if (asked.length === 0 && only.length === 0) return;
    const keeping = ctx.candidates.filter((m) => speaksResponses(env.providers.get(m.provider)!));
    if (keeping.length > 0) {
      ctx.candidates = keeping;
      return;
    }
    if (asked.length === 0)
      throw new AppError('invalid_request', {
        message: `No model that may serve this request is at a vendor that speaks Responses, so ${only.map((f) => f.field).join(', ')} cannot be sent as they are, and chat completions has no way to carry them.`,
        fix: 'Configure the model at a provider with responses: true (an OpenAI-kind vendor that speaks Responses); or offer only function tools and send only messages, function calls and their outputs.',
        details: { errors: only },
      });
    throw new AppError('invalid_request', {
      message: `No model that may serve this request is at a vendor that keeps responses, so ${asked.join(' and ')} cannot be honoured.`,
      fix: 'Send the whole conversation in input (the earlier output items included) and leave store unset or false; or configure a provider with responses: true.',
      details: {
        errors: [
          ...asked.map((field) => ({
            field,
            message:
              field === 'store'
                ? 'store: true needs a vendor that keeps responses; leave it unset or false'
                : `${field} needs a vendor that keeps responses; send the conversation in input instead`,
          })),
          ...only,
        ],
      },
    });
  },
};
