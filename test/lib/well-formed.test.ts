import test from 'ava';
import fc from 'fast-check';
import { canonicalJson } from '../../src/lib/canonical-json.js';
import { jsonFault, stripPrototypeKeys } from '../../src/lib/well-formed.js';

/**
 * `jsonFault`, the check every body passes before any schema (lib/well-formed.ts): whatever JSON
 * a client can send, it finds nothing in a value the ledger can hash, and for a value it cannot,
 * it names the very place of the fault.
 */
const text = fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => s.isWellFormed());
const json = fc.jsonValue({ maxDepth: 5, stringUnit: 'binary' }).filter((v) => {
  try {
    canonicalJson(v);
    return true;
  } catch {
    return false;
  }
});
const lone = fc.integer({ min: 0xd800, max: 0xdfff }).map((u) => String.fromCharCode(u));

/** Every path to a value (the root is []). */
function pathsOf(value: unknown, at: string[] = []): string[][] {
  const out = [at];
  if (value && typeof value === 'object')
    for (const [key, child] of Object.entries(value)) out.push(...pathsOf(child, [...at, key]));
  return out;
}

/** A copy of `value` with `replacement` at `path` (the root itself for []). */
function put(value: unknown, path: string[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const copy = structuredClone(value) as Record<string, unknown>;
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string, unknown>;
  parent[path.at(-1)!] = replacement;
  return copy;
}

const where = (path: string[]) => (path.length > 0 ? path.join('.') : null);

test('any value the ledger can hash has no fault', (t) => {
  fc.assert(fc.property(json, (v) => jsonFault(v) === undefined));
  t.pass();
});

test('a lone surrogate anywhere, in a value or a key, is named by its path', (t) => {
  fc.assert(
    fc.property(json, fc.nat(), text, lone, fc.boolean(), (v, pick, prefix, unit, inKey) => {
      const paths = pathsOf(v).filter((p) => !p.some((k) => k.includes('.')));
      const path = paths[pick % paths.length]!;
      const bad = inKey ? { [`${prefix}${unit}`]: 1 } : `${prefix}${unit}`;
      const fault = jsonFault(put(v, path, bad));
      const expected = where(inKey ? [...path, `${prefix}${unit}`] : path);
      return fault?.field === expected && /well-formed Unicode/.test(fault.message);
    }),
  );
  t.pass();
});

test('a number JSON cannot carry is named by its path; nesting past 64 levels by where it goes too deep', (t) => {
  fc.assert(
    fc.property(json, fc.nat(), fc.constantFrom(Infinity, -Infinity, NaN), (v, pick, n) => {
      const paths = pathsOf(v).filter((p) => !p.some((k) => k.includes('.')));
      const path = paths[pick % paths.length]!;
      const fault = jsonFault(put(v, path, n));
      return fault?.field === where(path) && /too large/.test(fault.message);
    }),
  );
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 200 }), (extra) => {
      let deep: unknown = 1;
      for (let i = 0; i < 64 + extra + 1; i += 1) deep = { a: deep };
      const fault = jsonFault(deep);
      return fault?.field === Array(64).fill('a').join('.') && /more than 64 levels/.test(fault.message);
    }),
  );
  let ok: unknown = 1;
  for (let i = 0; i < 64; i += 1) ok = [ok];
  t.is(jsonFault(ok), undefined, '64 levels are allowed');
  t.is(jsonFault([ok])?.field, Array(64).fill('0').join('.'));
});

/** `value` with every key named __proto__, constructor or prototype left out, by a plain recursive copy. */
function withoutPrototypeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutPrototypeKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value))
    if (!['__proto__', 'constructor', 'prototype'].includes(key))
      Object.defineProperty(out, key, { value: withoutPrototypeKeys(child), enumerable: true });
  return out;
}

test('stripPrototypeKeys removes __proto__, constructor and prototype at any depth, counts them, and leaves the rest as it was', (t) => {
  // JSON text as a client sends it, with prototype keys mixed in at every level (JSON.parse makes them own keys).
  const key = fc.oneof(
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'x'),
    fc.string({ maxLength: 6 }),
  );
  const value = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      fc.jsonValue({ maxDepth: 1 }),
      fc.array(tie('node'), { maxLength: 3 }),
      fc.dictionary(key, tie('node'), { maxKeys: 4 }),
    ),
  })).node;
  fc.assert(
    fc.property(value, (v) => {
      const parsed = JSON.parse(JSON.stringify(v)) as unknown;
      const expected = withoutPrototypeKeys(JSON.parse(JSON.stringify(v)));
      const text = JSON.stringify(v);
      const count = (text.match(/"(__proto__|constructor|prototype)":/g) ?? []).length;
      const removed = stripPrototypeKeys(parsed);
      t.deepEqual(parsed, expected);
      t.true(removed <= count);
      t.false(/"(__proto__|constructor|prototype)":/.test(JSON.stringify(parsed)));
      t.is(({} as Record<string, unknown>).polluted, undefined);
    }),
    { numRuns: 300 },
  );
  const body = JSON.parse(
    '{"a":{"constructor":{"prototype":{"polluted":1}}},"__proto__":{"polluted":1},"b":[{"prototype":1}]}',
  ) as unknown;
  t.is(stripPrototypeKeys(body), 3);
  t.deepEqual(body, { a: {}, b: [{}] });
});
