import test from 'ava';
import fc from 'fast-check';
import { signHttpSchema, type SignHttpInput } from '../../src/agent-signing/schemas.js';

/**
 * The body of POST /v1/signatures/http (src/agent-signing/schemas.ts), as properties: whatever
 * JSON arrives, validation answers a value or field errors and never throws; what it accepts is
 * a URL that parses with a host and no credentials, an upper-case method, and headers svc may
 * cover (no reserved name, none twice, one line each).
 */

const RESERVED = new Set(['signature', 'signature-input', 'signature-agent', 'host']);

test('property: any JSON body is accepted only as a signable request, or refused by field; never a throw', (t) => {
  const headerName = fc.oneof(
    fc.constantFrom(
      'accept',
      'Accept',
      'content-digest',
      'signature',
      'Signature-Agent',
      'host',
      'x-a',
      'bad name',
      '',
    ),
    fc.string({ maxLength: 12 }),
  );
  const body = fc.record(
    {
      method: fc.oneof(fc.constantFrom('GET', 'post', 'G E T', ''), fc.string({ maxLength: 8 }), fc.integer()),
      url: fc.oneof(
        fc.webUrl({ withQueryParameters: true, withFragments: true }),
        fc.constantFrom('ftp://x.example/', 'https://u:p@x.example/', 'https://', 'not a url'),
        fc.string({ maxLength: 30 }),
      ),
      headers: fc.oneof(
        fc.dictionary(headerName, fc.oneof(fc.string({ maxLength: 20 }), fc.constant('a\r\nb'), fc.integer())),
        fc.constant(null),
      ),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(body, (input) => {
      const { value, error } = signHttpSchema.validate(input, { abortEarly: false });
      if (error) return error.details.length > 0;
      const v = value as SignHttpInput;
      const url = new URL(v.url);
      if (!['http:', 'https:'].includes(url.protocol) || url.username || url.password || !url.hostname) return false;
      if (!/^[A-Z]{1,20}$/.test(v.method)) return false;
      const names = Object.keys(v.headers).map((n) => n.toLowerCase());
      if (new Set(names).size !== names.length || names.some((n) => RESERVED.has(n))) return false;
      return Object.values(v.headers).every((h) => typeof h === 'string' && !/[\r\n\0]/.test(h));
    }),
    { numRuns: 3000 },
  );
  t.pass();
});
