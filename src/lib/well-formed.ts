/**
 * Text the ledger can hash. RFC 8785 canonical JSON (and so every ledger record) refuses strings
 * that are not well-formed Unicode (a lone surrogate such as "\ud800" is valid JSON text but no
 * character), so such input is refused where it enters, naming the field, never a 500 later.
 */

export const MAX_DEPTH = 64;

/**
 * Where the first ill-formed string in a JSON value is (keys included): its dotted path, null for
 * the value as a whole, or undefined when every string is well formed.
 * A value nested deeper than 64 levels is reported too: it cannot be checked without risking the
 * stack, and no route accepts such a body.
 */
export function illFormedPath(value: unknown, path: string[] = [], depth = 0): string | null | undefined {
  if (typeof value === 'string') return value.isWellFormed() ? undefined : path.length > 0 ? path.join('.') : null;
  if (value === null || typeof value !== 'object') return undefined;
  if (depth > MAX_DEPTH) return path.join('.');
  for (const [key, child] of Object.entries(value)) {
    const at = [...path, key];
    if (!key.isWellFormed()) return at.join('.');
    const found = illFormedPath(child, at, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Whether a JSON value nests more than `levels` objects or arrays deep; recurses at most that far. */
export function nestsDeeperThan(value: unknown, levels: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (levels === 0) return true;
  return Object.values(value).some((child) => nestsDeeperThan(child, levels - 1));
}

/** Whether a JSON value holds a number JSON cannot carry exactly (1e400 parses to Infinity). */
export function hasNonFiniteNumber(value: unknown, depth = 0): boolean {
  if (typeof value === 'number') return !Number.isFinite(value);
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return false;
  return Object.values(value).some((child) => hasNonFiniteNumber(child, depth + 1));
}

/**
 * What makes a JSON value too big to hand to a validator, or undefined: more than `members`
 * members (object keys and array items, at every depth), or an array of more than `arrayItems`
 * items. One walk that stops at the first excess, so the cost is bounded whatever the value's size
 * (a validator that lists every field at fault walks every item of an over-long array first).
 */
export function sizeFault(value: unknown, limits: { members: number; arrayItems?: number }): string | undefined {
  let left = limits.members;
  const longest = limits.arrayItems ?? Infinity;
  let fault: string | undefined;
  const walk = (v: unknown, depth: number): boolean => {
    // Deeper levels are left to the route's own limits (and are not counted).
    if (v === null || typeof v !== 'object' || depth > MAX_DEPTH) return false;
    if (Array.isArray(v) && v.length > longest) {
      fault = `the body has an array of more than ${longest} items`;
      return true;
    }
    for (const key in v) {
      left -= 1;
      if (left < 0) {
        fault = `the body has more than ${limits.members} fields and items in all`;
        return true;
      }
      if (walk((v as Record<string, unknown>)[key], depth + 1)) return true;
    }
    return false;
  };
  walk(value, 0);
  return fault;
}

/** What is wrong with a parsed JSON value as a whole, by field, before any schema looks at it. */
export interface JsonFault {
  field: string | null;
  message: string;
}

/**
 * The first fault of a parsed JSON body that no schema should have to meet, or undefined:
 * nesting deeper than 64 levels, a string or key that is not well-formed Unicode (a lone
 * surrogate: RFC 8785, and so the ledger, has no form for it), or a number JSON cannot carry
 * (Infinity). Each is named by its dotted path; when a body has several, nesting is named first,
 * then text, then numbers. One walk, linear in the value's size, never deeper than 64 levels of
 * recursion whatever the value: every body of every route passes here.
 */
export function jsonFault(value: unknown): JsonFault | undefined {
  let text: string | null | undefined;
  let number: string | null | undefined;
  const at = (path: string[]) => (path.length > 0 ? path.join('.') : null);
  const walk = (v: unknown, path: string[]): string | null | undefined => {
    if (typeof v === 'string') {
      if (text === undefined && !v.isWellFormed()) text = at(path);
      return undefined;
    }
    if (typeof v === 'number') {
      if (number === undefined && !Number.isFinite(v)) number = at(path);
      return undefined;
    }
    if (v === null || typeof v !== 'object') return undefined;
    if (path.length === MAX_DEPTH) return at(path);
    for (const [key, child] of Object.entries(v)) {
      const next = [...path, key];
      if (text === undefined && !key.isWellFormed()) text = at(next);
      const deep = walk(child, next);
      if (deep !== undefined) return deep;
    }
    return undefined;
  };
  const deep = walk(value, []);
  const say = (field: string | null, what: string): JsonFault => ({
    field,
    message: `${field === null ? 'the body' : `"${field}"`} ${what}`,
  });
  if (deep !== undefined) return say(deep, `nests objects and arrays more than ${MAX_DEPTH} levels deep`);
  if (text !== undefined) return say(text, 'must be well-formed Unicode text (it holds a lone surrogate)');
  if (number !== undefined) return say(number, 'is a number too large for JSON to carry exactly');
  return undefined;
}

/** Keys that reach an object's prototype when code copies or looks up by them: no route takes them. */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Removes every key named `__proto__`, `constructor` or `prototype` from a parsed body, at every
 * depth down to MAX_DEPTH, in place: what follows (the schemas, the lookups by field name, the
 * services) never meets one. Returns how many were removed.
 */
export function stripPrototypeKeys(value: unknown): number {
  let removed = 0;
  const walk = (v: unknown, depth: number): void => {
    if (v === null || typeof v !== 'object' || depth > MAX_DEPTH) return;
    for (const key of Object.keys(v)) {
      if (PROTOTYPE_KEYS.has(key)) {
        delete (v as Record<string, unknown>)[key];
        removed += 1;
      } else walk((v as Record<string, unknown>)[key], depth + 1);
    }
  };
  walk(value, 0);
  return removed;
}
