import canonicalize from 'canonicalize';

/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): the one byte form of a JSON value that the
 * ledger hashes and signs. Sorting, number formatting and string escaping are delegated to
 * `canonicalize` (the RFC's reference implementation); this module decides what may go in.
 *
 * Rules enforced (each violation is a `TypeError` naming the path, never a silent change):
 * - Numbers must be finite (no NaN, Infinity, -Infinity); -0 serializes as `0` (RFC 8785 3.2.2.3).
 * - No BigInt, symbol or function anywhere, and no `undefined` at the top level or in an array
 *   (JSON.stringify would drop or null them, so the hash would not cover what the caller passed).
 *   An object property whose value is `undefined` is omitted, as JSON has no such member.
 * - Strings and property names must be well-formed UTF-16 (no lone surrogates), so UTF-8 is exact.
 * - Objects are arrays or plain objects (prototype `Object.prototype` or `null`) once `toJSON`
 *   has been applied (so `Date` and `Buffer` work); a `Map`, `Set`, typed array or class
 *   instance would lose data and is refused. Boxed primitives are unwrapped.
 * - No cycles.
 * Property order is by UTF-16 code units, whatever the insertion order.
 */
export function canonicalJson(value: unknown): string {
  // Fast path (the ledger's records): already plain JSON, checked without copying or building
  // paths. Anything else takes the full path, which converts what it may and names the fault.
  if (isPlainJson(value, 0)) return canonicalize(value)!;
  const plain = toPlain(value, '$', new Set());
  if (plain === undefined) throw new TypeError('canonicalJson: undefined has no JSON form');
  const text = canonicalize(plain);
  if (text === undefined) throw new TypeError('canonicalJson: value has no JSON form');
  return text;
}

// With the u flag a paired surrogate is one code point, so only a lone surrogate matches.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * True when the value needs no conversion and breaks no rule: finite numbers, well-formed strings
 * and keys, arrays and plain objects without toJSON or undefined members, at most 64 levels deep
 * (so no cycle can hide in it). False sends the value down the full path.
 */
function isPlainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'string':
      return value.isWellFormed();
    case 'object':
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (depth > 64) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (!isPlainJson(item, depth + 1)) return false;
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if ((proto !== Object.prototype && proto !== null) || typeof (value as { toJSON?: unknown }).toJSON === 'function')
    return false;
  for (const key in value) {
    if (!key.isWellFormed()) return false;
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined || !isPlainJson(item, depth + 1)) return false;
  }
  return true;
}

type Plain = null | boolean | number | string | Plain[] | { [key: string]: Plain };

function toPlain(input: unknown, path: string, ancestors: Set<object>): Plain | undefined {
  let value = resolveToJson(input, path);
  if (value instanceof Number || value instanceof String || value instanceof Boolean) value = value.valueOf();
  switch (typeof value) {
    case 'undefined':
      return undefined;
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value))
        throw new TypeError(`canonicalJson: ${path} is ${value}, which JSON cannot represent`);
      return value;
    case 'string':
      return checkString(value, path);
    case 'bigint':
      throw new TypeError(`canonicalJson: ${path} is a BigInt, which JSON cannot represent`);
    case 'symbol':
    case 'function':
      throw new TypeError(`canonicalJson: ${path} is a ${typeof value}, which JSON cannot represent`);
    default:
      break;
  }
  if (value === null) return null;
  const object = value as object;
  if (ancestors.has(object)) throw new TypeError(`canonicalJson: ${path} is a circular reference`);
  ancestors.add(object);
  try {
    return Array.isArray(object) ? arrayToPlain(object, path, ancestors) : objectToPlain(object, path, ancestors);
  } finally {
    ancestors.delete(object);
  }
}

function resolveToJson(value: unknown, path: string): unknown {
  if (value === null || typeof value !== 'object') return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON !== 'function') return value;
  const resolved: unknown = toJSON.call(value);
  if (
    resolved !== null &&
    typeof resolved === 'object' &&
    typeof (resolved as { toJSON?: unknown }).toJSON === 'function'
  ) {
    throw new TypeError(`canonicalJson: ${path}.toJSON() returned another object with toJSON`);
  }
  return resolved;
}

function arrayToPlain(array: readonly unknown[], path: string, ancestors: Set<object>): Plain[] {
  const out: Plain[] = [];
  for (let i = 0; i < array.length; i++) {
    const item = toPlain(array[i], `${path}[${i}]`, ancestors);
    if (item === undefined)
      throw new TypeError(`canonicalJson: ${path}[${i}] is undefined, which JSON cannot represent`);
    out.push(item);
  }
  return out;
}

function objectToPlain(object: object, path: string, ancestors: Set<object>): { [key: string]: Plain } {
  const proto: unknown = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) {
    const name = (object as { constructor?: { name?: string } }).constructor?.name ?? 'object';
    throw new TypeError(`canonicalJson: ${path} is a ${name}, not a plain object`);
  }
  const out: { [key: string]: Plain } = Object.create(null) as { [key: string]: Plain };
  for (const key of Object.keys(object)) {
    const childPath = `${path}.${key}`;
    checkString(key, `${childPath} (property name)`);
    const item = toPlain((object as Record<string, unknown>)[key], childPath, ancestors);
    if (item !== undefined) out[key] = item;
  }
  return out;
}

function checkString(value: string, path: string): string {
  if (LONE_SURROGATE.test(value)) throw new TypeError(`canonicalJson: ${path} contains a lone surrogate`);
  return value;
}
