import type { VendorJson as Json } from '../vendor-json.js';

/**
 * The tools of a Responses request as a vendor asked in chat completions is offered them, and its
 * calls named back as the client offered them (translate/responses-api.ts uses these both ways):
 * a namespace's tools under `<namespace>__<name>`, an `additional_tools` item's tools with the
 * request's, a custom tool as a function of one string argument, `input`.
 */

/**
 * A namespace's function tool is offered to a vendor asked in chat completions as
 * `<namespace>__<name>`; its calls come back as function_call items with `namespace` and `name`.
 */
export const flatName = (namespace: unknown, name: unknown): unknown =>
  typeof namespace === 'string' && namespace !== '' ? `${namespace}__${String(name)}` : name;

/**
 * The tools a request offers: its `tools`, then those of its `additional_tools` input items (how
 * Codex offers its tools), in order.
 */
export function offeredTools(body: Json): Json[] {
  const tools: Json[] = Array.isArray(body.tools) ? [...(body.tools as Json[])] : [];
  if (Array.isArray(body.input))
    for (const item of body.input as Json[])
      if (item?.type === 'additional_tools' && Array.isArray(item.tools)) tools.push(...(item.tools as Json[]));
  return tools;
}

/**
 * A custom tool (free-form text input, optionally in a grammar) as a function of one string
 * argument, `input`; its grammar, when it has one, told in the argument's description.
 */
export function customAsFunction(t: Json): Json {
  const grammar =
    t.format?.type === 'grammar' && typeof t.format.definition === 'string'
      ? ` It follows this ${String(t.format.syntax ?? '')} grammar:\n${t.format.definition}`
      : '';
  return {
    name: t.name,
    ...(t.description ? { description: t.description } : {}),
    parameters: {
      type: 'object',
      properties: { input: { type: 'string', description: `The tool's input, as text.${grammar}` } },
      required: ['input'],
      additionalProperties: false,
    },
  };
}

export interface OfferedName {
  namespace?: string;
  name: string;
  custom: boolean;
}

/** The request's tools that are not plain function tools (namespaced or custom), by flat name. */
export function namespacedTools(request: Json): Map<string, OfferedName> {
  const found = new Map<string, OfferedName>();
  for (const t of offeredTools(request)) {
    if (t?.type === 'namespace')
      for (const m of (Array.isArray(t.tools) ? t.tools : []) as Json[])
        found.set(String(flatName(t.name, m?.name)), {
          namespace: String(t.name),
          name: String(m?.name),
          custom: m?.type === 'custom',
        });
    else if (t?.type === 'custom') found.set(String(t.name), { name: String(t.name), custom: true });
  }
  return found;
}

/** A custom tool's input from the arguments of the function it was offered as. */
export const customInput = (args: string): string => {
  try {
    const parsed = JSON.parse(args) as Json;
    return typeof parsed?.input === 'string' ? parsed.input : args;
  } catch {
    return args;
  }
};
