import { AppError } from '../errors/app-error.js';
import { metrics } from '../lib/metrics.js';
import type { DataLossMode } from '../settings/schema.js';
import { countByKind, describeCounts, findSensitive, redact, type DlpKind } from './dlp.js';

/**
 * Data-loss screening of a model request's prompt text (issue 6): every text a vendor would read
 * (system, message contents, text parts, tool results) in either chat shape, in a Responses body
 * (instructions, input, function call outputs) and in an embeddings body (input).
 * Rules:
 * - off: nothing is read. block: any finding refuses the request (400 sensitive_data_blocked)
 *   with counts per kind, never a value. redact: each finding is replaced in place before the
 *   request leaves, and the counts are reported back in x-svc-redacted.
 * - Tool-call arguments and tool definitions are not prompt text and are left as they are.
 */
type Json = Record<string, unknown>;

/** Calls `visit` on each prompt string with a setter that replaces it. */
function eachText(body: Json, visit: (text: string, set: (v: string) => void) => void): void {
  const content = (holder: Json, key: string) => {
    const value = holder[key];
    if (typeof value === 'string')
      visit(value, (v) => {
        holder[key] = v;
      });
    else if (Array.isArray(value)) {
      for (const part of value) {
        if (part && typeof part === 'object') {
          if (typeof part.text === 'string')
            visit(part.text, (v) => {
              part.text = v;
            });
          if (part.type === 'tool_result' && part.content !== undefined) content(part, 'content');
        }
      }
    }
  };
  if (body.system !== undefined) content(body, 'system');
  if (Array.isArray(body.messages))
    for (const m of body.messages) if (m && typeof m === 'object') content(m, 'content');
  // POST /v1/responses: instructions, and input as a string or items (messages, function call
  // outputs); POST /v1/embeddings: input as a string or strings (token arrays are not text).
  if (typeof body.instructions === 'string') content(body, 'instructions');
  const input = body.input;
  if (typeof input === 'string') content(body, 'input');
  else if (Array.isArray(input)) {
    input.forEach((item: unknown, i: number) => {
      if (typeof item === 'string')
        visit(item, (v) => {
          input[i] = v;
        });
      else if (item && typeof item === 'object') {
        const it = item as Json;
        if (it.content !== undefined) content(it, 'content');
        if (it.type === 'function_call_output' && it.output !== undefined) content(it, 'output');
      }
    });
  }
}

export function promptText(body: Json): string {
  const parts: string[] = [];
  eachText(body, (text) => parts.push(text));
  return parts.join('\n');
}

/** Applies the mode; returns the counts redacted (empty when none or off). */
export function screen(body: Json, mode: DataLossMode): Partial<Record<DlpKind, number>> {
  if (mode === 'off') return {};
  const total: Partial<Record<DlpKind, number>> = {};
  eachText(body, (text, set) => {
    const findings = findSensitive(text);
    if (findings.length === 0) return;
    for (const [kind, n] of Object.entries(countByKind(findings)) as Array<[DlpKind, number]>)
      total[kind] = (total[kind] ?? 0) + n;
    if (mode === 'redact') set(redact(text, findings));
  });
  for (const [kind, n] of Object.entries(total)) metrics.dataLossFindings.inc({ kind, mode }, n);
  if (mode === 'block' && Object.keys(total).length > 0) {
    throw new AppError('sensitive_data_blocked', {
      message: `The request holds ${describeCounts(total)}, and this workspace blocks sensitive data.`,
      details: { findings: total },
    });
  }
  return total;
}
