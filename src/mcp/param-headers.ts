import type { IncomingMessage } from 'node:http';
import { isPaddedBase64 } from '../lib/base64.js';

/** A Mcp-Param-* header's value: Base64 between `=?base64?` and `?=` is decoded; undefined when that is malformed. */
function decodeParam(value: string): string | undefined {
  const m = /^=\?base64\?(.*)\?=$/.exec(value);
  if (!m) return value;
  if (!isPaddedBase64(m[1]!)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(m[1]!, 'base64'));
  } catch {
    return undefined;
  }
}

/**
 * SEP-2243: for each property of the tool's input schema (reached through `properties` alone)
 * that declares `x-mcp-header: Name`, a value in the body's arguments must come with a
 * `Mcp-Param-Name` header that decodes to the same value (numbers compared as numbers); a header
 * with malformed Base64 is refused. Returns what disagrees, or undefined.
 */
export function paramHeaderMismatch(
  schema: unknown,
  args: unknown,
  headers: IncomingMessage['headers'],
): { header: string; message: string } | undefined {
  const declared: Array<{ header: string; path: string[]; type: unknown }> = [];
  const walk = (node: unknown, path: string[]) => {
    const properties = (node as { properties?: unknown } | null)?.properties;
    if (!properties || typeof properties !== 'object') return;
    for (const [key, child] of Object.entries(properties as Record<string, unknown>)) {
      const header = (child as Record<string, unknown> | null)?.['x-mcp-header'];
      if (typeof header === 'string' && header !== '')
        declared.push({ header, path: [...path, key], type: (child as { type?: unknown }).type });
      walk(child, [...path, key]);
    }
  };
  walk(schema, []);
  for (const d of declared) {
    let value: unknown = args;
    for (const key of d.path)
      value = value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
    if (value === undefined || value === null || typeof value === 'object') continue;
    const header = `mcp-param-${d.header.toLowerCase()}`;
    const raw = headers[header];
    const sent = Array.isArray(raw) ? raw[0] : raw;
    if (sent === undefined)
      return { header, message: `the body carries ${d.path.join('.')} but the Mcp-Param-${d.header} header is absent` };
    const decoded = decodeParam(sent);
    if (decoded === undefined) return { header, message: `the Mcp-Param-${d.header} header carries malformed Base64` };
    const same =
      typeof value === 'number' || d.type === 'integer' || d.type === 'number'
        ? Number(decoded) === Number(value)
        : decoded === String(value);
    if (!same)
      return { header, message: `the Mcp-Param-${d.header} header disagrees with ${d.path.join('.')} in the body` };
  }
  return undefined;
}
