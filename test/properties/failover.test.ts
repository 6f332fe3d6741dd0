import test from 'ava';
import fc from 'fast-check';
import {
  backoffMs,
  BACKOFF_BASE_MS,
  durationSeconds,
  judge,
  retryAfterMs,
  usualFault,
} from '../../src/gateway/failover.js';
import { vendorOf } from '../../src/gateway/vendors/index.js';
import type { ProviderKind } from '../../src/settings/schema.js';

/**
 * The failover rule's readers of what a vendor sends (src/gateway/failover.ts) under any input: a
 * `retry-after` or `retry-after-ms` header, a Gemini RetryInfo duration, and an error answer's
 * status, headers and body, for every vendor kind's adapter. Each is read as a wait (a finite,
 * non-negative number of milliseconds) or as nothing, and an answer is judged a failure or a
 * refusal, never a thrown error (which would be a 500). The backoff stays within its bounds.
 */
const RUNS = 300;
const KINDS: ProviderKind[] = ['openai', 'anthropic', 'azure-openai', 'gemini', 'bedrock'];

const headerValue = fc.oneof(
  fc.string(),
  fc.nat().map(String),
  fc.date({ noInvalidDate: true }).map((d) => d.toUTCString()),
  fc.constantFrom('1', '0', '1.5', '-3', 'soon', '', ' 30 ', 'Wed, 21 Oct 2015 07:28:00 GMT'),
);
const body = fc.oneof(
  fc.string(),
  fc.json(),
  fc
    .record({
      error: fc.record(
        {
          code: fc.oneof(fc.string(), fc.integer()),
          message: fc.string(),
          status: fc.constantFrom('RESOURCE_EXHAUSTED', 'UNAVAILABLE', 'INVALID_ARGUMENT', 'x'),
          details: fc.array(
            fc.oneof(
              fc.record({
                '@type': fc.constant('type.googleapis.com/google.rpc.RetryInfo'),
                retryDelay: fc.oneof(
                  fc.string(),
                  fc.nat().map((n) => `${n}s`),
                  fc.integer(),
                ),
              }),
              fc.record({ reason: fc.oneof(fc.string(), fc.constant('API_KEY_INVALID')) }),
              fc.anything(),
            ),
          ),
        },
        { requiredKeys: [] },
      ),
      message: fc.string(),
      __type: fc.constantFrom('ThrottlingException', 'ValidationException', 'x'),
    })
    .map((v) => JSON.stringify(v)),
);

test('a retry-after of any text is a finite wait of at least zero, or none', (t) => {
  fc.assert(
    fc.property(headerValue, fc.integer({ min: 0, max: 4_102_444_800_000 }), (value, now) => {
      const ms = retryAfterMs(value, now);
      return ms === undefined || (Number.isFinite(ms) && ms >= 0);
    }),
    { numRuns: RUNS, verbose: 1 },
  );
  t.is(retryAfterMs('2', 0), 2000);
  t.is(retryAfterMs(new Date(5000).toUTCString(), 1000), 4000);
  t.is(retryAfterMs('not a date', 0), undefined);
});

test('a RetryInfo duration reads as seconds, or as nothing', (t) => {
  fc.assert(
    fc.property(fc.anything(), (value) => {
      const s = durationSeconds(value);
      return s === undefined || (Number.isFinite(Number(s)) && Number(s) >= 0);
    }),
    { numRuns: RUNS, verbose: 1 },
  );
  t.is(durationSeconds('30s'), '30');
  t.is(durationSeconds('1.500s'), '1.5');
  t.is(durationSeconds('30'), undefined);
});

test("any error answer, for every kind's adapter, is judged a failure or a refusal, never a throw", (t) => {
  fc.assert(
    fc.property(
      fc.constantFrom(...KINDS),
      fc.integer({ min: 400, max: 599 }),
      fc.dictionary(fc.constantFrom('retry-after', 'retry-after-ms', 'x-amzn-errortype', 'x-other'), headerValue),
      body,
      (kind, status, headers, text) => {
        const verdict = judge(status, headers, text, vendorOf(kind).fault);
        if (verdict.kind === 'refused') return verdict.status === status && typeof verdict.body === 'object';
        if (verdict.kind !== 'failed' || verdict.status !== status) return false;
        // A wait is kept as the vendor wrote it; one that does not read as a wait is none (retryAfterMs).
        return verdict.retryAfter === undefined || typeof verdict.retryAfter === 'string';
      },
    ),
    { numRuns: RUNS, verbose: 1 },
  );
  // 5xx and 429 always fail over; a refusal names the context window only in the vendor's words.
  for (const kind of KINDS) {
    t.is(judge(503, {}, '', vendorOf(kind).fault).kind, 'failed', kind);
    t.is(judge(429, {}, '{}', vendorOf(kind).fault).kind, 'failed', kind);
    t.is(judge(400, {}, 'not json', vendorOf(kind).fault).kind, 'refused', kind);
  }
  t.like(usualFault(529), { throttled: true });
});

test('the backoff stays between half and all of 250 ms doubled n times', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 20 }), fc.double({ min: 0, max: 1, noNaN: true }), (n, r) => {
      const ms = backoffMs(n, () => r);
      const full = BACKOFF_BASE_MS * 2 ** n;
      return ms >= Math.floor(full / 2) && ms <= full;
    }),
    { numRuns: RUNS, verbose: 1 },
  );
  t.pass();
});
