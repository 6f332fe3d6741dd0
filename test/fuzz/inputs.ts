import fc from 'fast-check';

/**
 * What the campaign sends: fast-check arbitraries for path parameters, query strings, bodies (from
 * the route's own OpenAPI schema, and anything else JSON can say), content types and encodings.
 */

/** A JSON Schema as /openapi.json gives it (the parts the generator reads). */
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  minItems?: number;
  $ref?: string;
}

/** What the generator knows: the document's shared schemas, and real values for some field names (a model id, an agent id). */
export interface Context {
  components: Record<string, Schema>;
  hints: Record<string, string[]>;
  /** Only what the schema allows (its strings may still be odd or long): requests that get past validation. */
  aimed?: boolean;
}

/** Percent-escapes every byte of the string's UTF-8 (a lone surrogate as U+FFFD) outside `keep`. */
const escape = (value: string, keep = /[A-Za-z0-9\-_.~]/): string =>
  [...value]
    .map((c) =>
      keep.test(c) ? c : [...Buffer.from(c)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
    )
    .join('');

/** Strings that have broken parsers: escapes, traversal, NUL, prototype names, numbers that are not. */
export const ODD_STRINGS = [
  '',
  ' ',
  '%ZZ',
  '%',
  '%%',
  '%u0041',
  '..',
  '../..',
  '%2e%2e',
  '%2F',
  '%00',
  '\u0000',
  '%c0%af',
  '%ff%fe',
  '\uFEFF',
  '\uD800',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'null',
  'undefined',
  'NaN',
  '-0',
  '1e309',
  '9007199254740993',
  '0x1f',
  '*',
  '$where',
  "' OR 1=1 --",
  '<script>alert(1)</script>',
  '{{7*7}}',
  '${jndi:ldap://x}',
];

/** Fields of the protocols the server speaks (OAuth, JSON-RPC), for routes whose schema names none. */
const WELL_KNOWN_FIELDS = [
  'grant_type',
  'client_id',
  'client_secret',
  'code',
  'code_verifier',
  'redirect_uri',
  'refresh_token',
  'token',
  'token_type_hint',
  'scope',
  'resource',
  'response_type',
  'state',
  'code_challenge',
  'code_challenge_method',
  'client_name',
  'redirect_uris',
  'jsonrpc',
  'method',
  'id',
  'params',
];

/** A long run of one character (the kind a tokenizer or a regular expression can choke on). */
export const longString = (min = 1_000, max = 50_000): fc.Arbitrary<string> =>
  fc
    .tuple(fc.integer({ min, max }), fc.constantFrom('a', 'é', '😀', ' ', '\\', '"', '%', '0', 'ab '))
    .map(([n, unit]) => unit.repeat(Math.ceil(n / unit.length)));

const text: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.constantFrom(...ODD_STRINGS) },
  { weight: 1, arbitrary: longString() },
);

const oddNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1e308, -1e308, 2 ** 53 + 1, 0.1, 1e-320, Number.MAX_SAFE_INTEGER),
);

/** Any JSON value, now and then deep or long. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, 0, '', [], {}) },
  { weight: 1, arbitrary: text },
);

/** Values for a schema: mostly what it asks for, sometimes anything. */
export function fromSchema(schema: Schema | undefined, ctx: Context, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 6) return anyJson;
  if (schema.$ref) return fromSchema(ctx.components[schema.$ref.split('/').pop() ?? ''], ctx, depth + 1);
  const choices: fc.Arbitrary<unknown>[] = [];
  if (schema.const !== undefined) choices.push(fc.constant(schema.const));
  if (schema.enum) choices.push(fc.constantFrom(...schema.enum));
  for (const sub of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])])
    choices.push(fromSchema(sub, ctx, depth + 1));
  // An enumeration or a constant says all there is to say (the 1 in 7 of anything else mutates it).
  const types = choices.length > 0 ? [] : Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  for (const type of types) {
    if (type === 'string')
      choices.push(ctx.aimed ? fc.oneof({ weight: 3, arbitrary: text }, { weight: 1, arbitrary: longString() }) : text);
    else if (type === 'integer') {
      const bounded = fc.integer({ min: schema.minimum ?? -10, max: Math.min(schema.maximum ?? 1_000, 2 ** 31) });
      choices.push(ctx.aimed ? bounded : fc.oneof(bounded, oddNumber));
    } else if (type === 'number')
      choices.push(
        ctx.aimed ? fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true }) : oddNumber,
      );
    else if (type === 'boolean') choices.push(fc.boolean());
    else if (type === 'null') choices.push(fc.constant(null));
    else if (type === 'array')
      choices.push(
        fc.array(fromSchema(schema.items, ctx, depth + 1), {
          minLength: Math.min(schema.minItems ?? 0, 2),
          maxLength: depth < 2 ? 4 : 2,
        }),
      );
    else if (type === 'object') choices.push(objectFrom(schema, ctx, depth));
  }
  if (choices.length === 0 && schema.properties) choices.push(objectFrom(schema, ctx, depth));
  // An open object (OAuth's forms, say) gets the fields such routes read.
  if (types.includes('object') && Object.keys(schema.properties ?? {}).every((name) => name.startsWith('/')))
    choices.push(fc.record(Object.fromEntries(WELL_KNOWN_FIELDS.map((name) => [name, text])), { requiredKeys: [] }));
  if (choices.length === 0) return anyJson;
  if (ctx.aimed) return fc.oneof(...choices);
  return fc.oneof({ weight: 6, arbitrary: fc.oneof(...choices) }, { weight: 1, arbitrary: anyJson });
}

function objectFrom(schema: Schema, ctx: Context, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  const record = Object.fromEntries(
    Object.entries(properties).map(([name, sub]) => {
      const generic = fromSchema(sub, ctx, depth + 1);
      const real = ctx.hints[name];
      return [
        name,
        real
          ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...real) }, { weight: 1, arbitrary: generic })
          : generic,
      ];
    }),
  );
  const required = (schema.required ?? []).filter((name) => name in properties);
  // Each optional field is one more chance of a refusal: some objects have only the required ones.
  const minimal = Object.fromEntries(Object.entries(record).filter(([name]) => required.includes(name)));
  return fc
    .tuple(
      fc.oneof(fc.record(record, { requiredKeys: required }), fc.record(minimal)),
      fc.dictionary(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom(...ODD_STRINGS)), anyJson, {
        maxKeys: 2,
      }),
      fc.boolean(),
    )
    .map(([known, extra, withExtra]) => (withExtra && !ctx.aimed ? { ...extra, ...known } : known));
}

export interface Body {
  bytes: Buffer;
  contentType?: string;
  contentEncoding?: string;
  /** How it was made, for the report. */
  kind: string;
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value) ?? 'null');

/** `{"__proto__":…,` or `"constructor":{"prototype":…}` written into an object's text (JSON.stringify drops neither, but an object literal would). */
const prototypeKeys = fc.constantFrom(
  '"__proto__":{"isAdmin":true}',
  '"constructor":{"prototype":{"isAdmin":true}}',
  '"__proto__":null',
  '"constructor":1',
  '"prototype":{}',
  '"hasOwnProperty":"x"',
  '"toString":{}',
);

function injectKey(object: unknown, key: string): Buffer {
  const textOf = JSON.stringify(object);
  if (typeof textOf === 'string' && textOf.startsWith('{') && textOf !== '{}')
    return Buffer.from(`{${key},${textOf.slice(1)}`);
  return Buffer.from(`{${key}}`);
}

const deep = fc
  .tuple(fc.integer({ min: 50, max: 50_000 }), fc.constantFrom('[', '{"a":', '{"a":['))
  .map(([depth, open]) => {
    const close = open === '[' ? ']' : open === '{"a":' ? '}' : ']}';
    return Buffer.from(open.repeat(depth) + '1' + close.repeat(depth));
  });

/** Bytes that are not UTF-8, or UTF-8 with a BOM, or the same JSON in UTF-16. */
function oddEncodings(value: fc.Arbitrary<unknown>): fc.Arbitrary<Body> {
  return fc.oneof(
    value.map((v) => ({
      bytes: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json(v)]),
      contentType: 'application/json',
      kind: 'utf8-bom',
    })),
    value.map((v) => ({
      bytes: Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(JSON.stringify(v) ?? 'null', 'utf16le')]),
      contentType: 'application/json; charset=utf-16',
      kind: 'utf16-bom',
    })),
    fc
      .tuple(value, fc.constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80]))
      .map(([v, bad]) => {
        const base = json(v);
        const at = Math.floor(base.length / 2);
        return {
          bytes: Buffer.concat([base.subarray(0, at), Buffer.from(bad), base.subarray(at)]),
          contentType: 'application/json',
          kind: 'invalid-utf8',
        };
      }),
    fc.uint8Array({ maxLength: 2_000 }).map((b) => ({
      bytes: Buffer.from(b),
      contentType: 'application/json',
      contentEncoding: 'gzip',
      kind: 'bad-gzip',
    })),
  );
}

const form = (value: unknown): Buffer => {
  const params = new URLSearchParams();
  if (value && typeof value === 'object' && !Array.isArray(value))
    for (const [k, v] of Object.entries(value)) params.append(k, typeof v === 'string' ? v : JSON.stringify(v));
  return Buffer.from(params.toString());
};

/** A body for a route whose JSON body follows `schema` (absent: any). */
/** A body the route's schema accepts, as JSON. */
export const aimedBody = (schema: Schema | undefined, ctx: Context): fc.Arbitrary<Body> =>
  fromSchema(schema, { ...ctx, aimed: true }).map((v) => ({
    bytes: json(v),
    contentType: 'application/json',
    kind: 'aimed',
  }));

export function body(schema: Schema | undefined, ctx: Context): fc.Arbitrary<Body> {
  const value = fromSchema(schema, ctx);
  const wrongType = fc.constantFrom(
    undefined,
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
    'application/json; charset=latin1',
    'a/b/c;;=',
    'application/json, text/plain',
  );
  return fc.oneof(
    { weight: 8, arbitrary: value.map((v) => ({ bytes: json(v), contentType: 'application/json', kind: 'schema' })) },
    { weight: 2, arbitrary: anyJson.map((v) => ({ bytes: json(v), contentType: 'application/json', kind: 'json' })) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(value, prototypeKeys)
        .map(([v, key]) => ({ bytes: injectKey(v, key), contentType: 'application/json', kind: 'prototype-key' })),
    },
    { weight: 1, arbitrary: deep.map((bytes) => ({ bytes, contentType: 'application/json', kind: 'deep' })) },
    { weight: 2, arbitrary: oddEncodings(value) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(value, wrongType)
        .map(([v, type]) => ({ bytes: json(v), ...(type ? { contentType: type } : {}), kind: 'content-type' })),
    },
    {
      weight: 2,
      arbitrary: value.map((v) => ({
        bytes: form(v),
        contentType: 'application/x-www-form-urlencoded',
        kind: 'form',
      })),
    },
    {
      weight: 1,
      arbitrary: fc
        .uint8Array({ maxLength: 500 })
        .map((b) => ({ bytes: Buffer.from(b), contentType: 'application/json', kind: 'bytes' })),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 1_000_000, max: 1_200_000 }).map((n) => ({
        bytes: Buffer.from(`{"x":"${'a'.repeat(n)}"}`),
        contentType: 'application/json',
        kind: 'over-limit',
      })),
    },
  );
}

/** A path parameter's value as it appears in the request target (escaped, or deliberately not). */
export function pathValue(real: string | undefined): fc.Arbitrary<string> {
  const fuzz = fc.oneof(
    { weight: 3, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }).map((s) => escape(s)) },
    { weight: 3, arbitrary: fc.constantFrom(...ODD_STRINGS).map((s) => (s.startsWith('%') ? s : escape(s))) },
    { weight: 1, arbitrary: fc.constantFrom('%ZZ', '..', '.', '%2e%2e%2f', 'a%00b', '%E0%A4%A', '%uD800') },
    { weight: 1, arbitrary: longString(1_000, 4_000).map((s) => escape(s)) },
    // Raw bytes that are not allowed in a request target: the HTTP parser, not the route, answers.
    { weight: 1, arbitrary: fc.constantFrom('é', 'a b', '"', '<>', '\\', '{}', '|', '^', '`') },
    { weight: 1, arbitrary: fc.constantFrom('ws_AAAAAAAAAAAAAAAAAAAAAA', 'agt_x', 'key_x', 'usr_x', 'act_x') },
  );
  return real === undefined
    ? fuzz
    : fc.oneof({ weight: 3, arbitrary: fc.constant(real) }, { weight: 2, arbitrary: fuzz });
}

/** A query string (with its `?`, or empty), with the route's own parameter names among others. */
export function query(names: string[]): fc.Arbitrary<string> {
  const name = fc.oneof(
    ...(names.length > 0 ? [fc.constantFrom(...names)] : []),
    fc.constantFrom('limit', 'cursor', 'after', 'before', 'from', 'to', '__proto__', 'constructor[prototype]', 'a[]'),
    fc.constantFrom(...WELL_KNOWN_FIELDS),
    fc.string({ maxLength: 8 }),
  );
  const value = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.integer().map(String),
    fc.constantFrom(...ODD_STRINGS),
    longString(1_000, 4_000),
  );
  const pair = fc
    .tuple(name, value, fc.boolean())
    .map(([n, v, escaped]) => `${escape(n)}=${escaped ? escape(v) : escape(v, /[\x21-\x7e]/)}`);
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant('') },
    { weight: 3, arbitrary: fc.array(pair, { minLength: 1, maxLength: 5 }).map((p) => `?${p.join('&')}`) },
  );
}

/** Headers besides the credential and the body's: tracing, request ids, MCP's, origins, nonsense. */
export const extraHeaders: fc.Arbitrary<[string, string][]> = fc.array(
  fc.oneof(
    fc.tuple(
      fc.constant('traceparent'),
      fc.constantFrom('00-zz-zz-01', '00-' + '0'.repeat(32) + '-' + '0'.repeat(16) + '-01', 'x'.repeat(5_000)),
    ),
    fc.tuple(fc.constant('x-request-id'), fc.constantFrom('', 'req_x', 'x'.repeat(5_000), '\u00e9')),
    fc.tuple(fc.constant('mcp-protocol-version'), fc.constantFrom('2026-07-28', '2025-11-25', '1999-01-01', '')),
    fc.tuple(fc.constant('mcp-session-id'), fc.constantFrom('x', '', 'x'.repeat(3_000))),
    fc.tuple(fc.constant('accept'), fc.constantFrom('text/event-stream', 'application/json', '*/*', 'text/html', ';;')),
    fc.tuple(fc.constant('origin'), fc.constantFrom('null', 'http://evil.example', 'http://127.0.0.1')),
    fc.tuple(fc.constant('idempotency-key'), fc.constantFrom('k', 'x'.repeat(3_000), '%ZZ')),
    fc.tuple(fc.constant('x-forwarded-for'), fc.constantFrom('1.2.3.4', 'garbage', '::1, ::1')),
    fc.tuple(fc.constant('range'), fc.constantFrom('bytes=0-1', 'bytes=x')),
  ),
  { maxLength: 2 },
);

/** Methods: mostly the route's, sometimes one it does not take. */
export const OTHER_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND'];
