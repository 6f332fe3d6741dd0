import { createHash, timingSafeEqual } from 'node:crypto';
import { isInnerList, parseDictionary, Token, type Dictionary } from 'structured-headers';

/**
 * The RFC 8941 structured fields a signed request carries, parsed for the verifier (httpsig.ts):
 * `Signature-Input`, `Signature` and `Content-Digest` (RFC 9530). Every function here answers a
 * shape, null or false for what it cannot read: none throws, whatever the header holds
 * (test/agent-signing/rfc9421.test.ts holds it by property).
 */

/** One signature's input as parsed: its label, covered components (serialised), and parameters. */
export interface ParsedSignatureInput {
  label: string;
  components: string[];
  params: Record<string, string | number | boolean>;
}

function parseDict(value: string): Dictionary | null {
  try {
    return parseDictionary(value);
  } catch {
    return null;
  }
}

/** A component as RFC 9421 names it in the base: `"name"` and its parameters (`;req`, `;key="x"`). */
function componentName(item: [unknown, Map<string, unknown>]): string | null {
  const [name, params] = item;
  if (typeof name !== 'string') return null;
  let out = JSON.stringify(name);
  for (const [k, v] of params)
    out += v === true ? `;${k}` : `;${k}=${typeof v === 'string' ? JSON.stringify(v) : String(v)}`;
  return out;
}

/**
 * Every signature input of a `Signature-Input` value, or null when it is not an RFC 8941
 * dictionary of inner lists of strings with bare parameters. Never throws.
 */
export function parseSignatureInput(value: string): ParsedSignatureInput[] | null {
  const dict = parseDict(value);
  if (!dict || dict.size === 0) return null;
  const out: ParsedSignatureInput[] = [];
  for (const [label, member] of dict) {
    if (!isInnerList(member)) return null;
    const components: string[] = [];
    for (const item of member[0]) {
      const name = componentName(item as [unknown, Map<string, unknown>]);
      if (name === null) return null;
      components.push(name);
    }
    const params: Record<string, string | number | boolean> = {};
    for (const [k, v] of member[1]) {
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') params[k] = v;
      else if (v instanceof Token) params[k] = v.toString();
      else return null;
    }
    out.push({ label, components, params });
  }
  return out;
}

/** The `Signature` member of a label, as bytes, or null. Never throws. */
export function signatureBytes(value: string, label: string): Buffer | null {
  const member = parseDict(value)?.get(label);
  if (!member || isInnerList(member) || !(member[0] instanceof ArrayBuffer)) return null;
  return Buffer.from(member[0]);
}

/**
 * Whether a `Content-Digest` value names the body: every sha-256 / sha-512 member it carries
 * matches, and it carries at least one. Never throws.
 */
export function digestMatches(value: string, body: Uint8Array): boolean {
  const dict = parseDict(value);
  if (!dict) return false;
  let checked = 0;
  for (const [alg, member] of dict) {
    const algorithm = alg === 'sha-256' ? 'sha256' : alg === 'sha-512' ? 'sha512' : null;
    if (!algorithm) continue;
    if (isInnerList(member) || !(member[0] instanceof ArrayBuffer)) return false;
    const expected = Buffer.from(member[0]);
    const actual = createHash(algorithm).update(body).digest();
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return false;
    checked += 1;
  }
  return checked > 0;
}
