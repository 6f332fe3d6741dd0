import test from 'ava';
import fc from 'fast-check';
import { paramHeaderMismatch } from '../../src/mcp/param-headers.js';

/**
 * SEP-2243 for proxied tools: an argument the upstream's input schema mirrors into a header
 * (`x-mcp-header`) must come with an `Mcp-Param-*` header that says the same, plainly or as
 * `=?base64?…?=`; a missing, different or malformed header is a mismatch (the caller gets 400,
 * -32020), and arguments that are not mirrored, or absent, need no header.
 */
const schema = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region' },
    level: { type: 'integer', 'x-mcp-header': 'Level' },
    note: { type: 'string' },
    nested: { type: 'object', properties: { zone: { type: 'string', 'x-mcp-header': 'Zone' } } },
  },
};
const b64 = (s: string) => `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;
const region = fc.string({ minLength: 1, maxLength: 40 });

test('a mirrored argument with the same value in its header, plain or in Base64, agrees', (t) => {
  fc.assert(
    fc.property(region, fc.integer({ min: -1e6, max: 1e6 }), fc.boolean(), (value, level, plain) => {
      const headers = {
        'mcp-param-region': plain && /^[\x21-\x7e]+$/.test(value) ? value : b64(value),
        'mcp-param-level': String(level),
      };
      return paramHeaderMismatch(schema, { region: value, level, note: 'x' }, headers) === undefined;
    }),
  );
  t.pass('every generated case agreed');
});

test('a missing or different header is a mismatch naming the header', (t) => {
  fc.assert(
    fc.property(region, region, (value, other) => {
      const missing = paramHeaderMismatch(schema, { region: value }, {});
      const differs = paramHeaderMismatch(schema, { region: value }, { 'mcp-param-region': b64(other) });
      return (
        missing?.header === 'mcp-param-region' && (value === other ? differs === undefined : differs !== undefined)
      );
    }),
  );
  t.like(paramHeaderMismatch(schema, { nested: { zone: 'eu' } }, {}), { header: 'mcp-param-zone' });
});

test('malformed Base64 is refused; numbers compare as numbers; absent arguments need no header', (t) => {
  for (const bad of ['=?base64?SGVsbG8?=', '=?base64?SGVs!!!bG8=?='])
    t.regex(
      paramHeaderMismatch(schema, { region: 'Hello' }, { 'mcp-param-region': bad })?.message ?? '',
      /malformed Base64/,
      bad,
    );
  t.is(paramHeaderMismatch(schema, { level: 42 }, { 'mcp-param-level': '42.0' }), undefined);
  t.is(paramHeaderMismatch(schema, { note: 'not mirrored' }, {}), undefined);
  t.is(paramHeaderMismatch(schema, { region: null }, {}), undefined);
  t.is(paramHeaderMismatch(undefined, { region: 'x' }, {}), undefined, 'a tool with no schema declares nothing');
});
