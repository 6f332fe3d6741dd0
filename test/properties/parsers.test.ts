import test from 'ava';
import fc from 'fast-check';
import { nextTraceparent } from '../../src/http/trace.js';
import { createRateLimiter } from '../../src/http/rate-limit.js';
import { memoryCounters } from '../../src/store/counters.js';
import { parseSignatureHeader, signatureMatches, signPayload } from '../../src/lib/svc-signature.js';
import { addressAllowed } from '../../src/service-tokens/index.js';

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });

test('traceparent: any input yields a well-formed header', (t) => {
  fc.assert(
    fc.property(fc.option(fc.string(), { nil: undefined }), (input) => TRACEPARENT.test(nextTraceparent(input))),
  );
  t.pass();
});

test('traceparent: a valid incoming trace id is kept, the span id is new', (t) => {
  fc.assert(
    fc.property(
      hex(32).filter((s) => !/^0+$/.test(s)),
      hex(16).filter((s) => !/^0+$/.test(s)),
      (trace, span) => {
        const out = nextTraceparent(`00-${trace}-${span}-01`).split('-');
        return out[1] === trace && out[3] === '01' && TRACEPARENT.test(out.join('-'));
      },
    ),
  );
  t.pass();
});

test('svc-signature: parsing any header never throws', (t) => {
  fc.assert(
    fc.property(fc.string(), (header) => {
      const parsed = parseSignatureHeader(header);
      return parsed === undefined || (Number.isInteger(parsed.t) && parsed.v1.length > 0);
    }),
  );
  t.pass();
});

test('svc-signature: a signed body verifies, and any changed byte does not', (t) => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 1, maxLength: 512 }),
      fc.string({ minLength: 1 }),
      fc.nat({ max: 2_000_000_000 }),
      fc.nat(),
      (bytes, secret, ts, at) => {
        const body = Buffer.from(bytes);
        const parsed = parseSignatureHeader(signPayload(secret, body, ts))!;
        if (!signatureMatches(parsed, body, [secret])) return false;
        const changed = Buffer.from(body);
        const i = at % changed.length;
        changed[i] = changed[i]! ^ 0x01;
        return !signatureMatches(parsed, changed, [secret]) && !signatureMatches(parsed, body, [`${secret}x`]);
      },
    ),
  );
  t.pass();
});

test('ipAllow matching never throws on arbitrary addresses', (t) => {
  fc.assert(
    fc.property(
      fc.oneof(fc.string(), fc.ipV4(), fc.ipV6()),
      (address) => typeof addressAllowed(address, ['10.0.0.0/8', '::1/128']) === 'boolean',
    ),
  );
  fc.assert(fc.property(fc.ipV4(), (address) => addressAllowed(address, ['0.0.0.0/0'])));
  t.pass();
});

test('rate limiter: never admits more than the limit in one window', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 200 }), async (limit, attempts) => {
      const clock = { now: () => 1_000_000 };
      const limiter = createRateLimiter({ limit, scope: 'public', counters: memoryCounters(), clock });
      let admitted = 0;
      for (let i = 0; i < attempts; i += 1) if ((await limiter.take('a')).allowed) admitted += 1;
      return admitted === Math.min(limit, attempts) && (await limiter.take('b')).allowed;
    }),
  );
  t.pass();
});
