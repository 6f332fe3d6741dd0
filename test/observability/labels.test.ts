import test from 'ava';
import fc from 'fast-check';
import { bounded } from '../../src/lib/metrics.js';
import { scrapeTokenMatches } from '../../src/observability/metrics.js';
import { tracesUrl } from '../../src/observability/tracing.js';

/**
 * The small parsers behind the metrics and traces: a label value is always from a closed,
 * short alphabet (so nothing a caller sends can mint series or break the exposition); the scrape
 * token matches itself only; the traces URL follows the OTLP rule.
 */
test('bounded: any input gives a short safe word, and keeps one that already is', (t) => {
  fc.assert(
    fc.property(fc.option(fc.string({ unit: 'binary', maxLength: 200 })), (value) => {
      const out = bounded(value);
      t.regex(out, /^[A-Za-z0-9][A-Za-z0-9_./:-]{0,79}$/);
      t.false(/["\\\n]/.test(out));
    }),
  );
  fc.assert(
    fc.property(fc.stringMatching(/^[a-z][a-z0-9_-]{0,30}$/), (word) => {
      t.is(bounded(word), word);
    }),
  );
  t.is(bounded(null), 'none');
  t.is(bounded('gpt-4o'), 'gpt-4o');
  t.is(bounded('a"b'), 'other');
  t.is(bounded('x'.repeat(81)), 'other');
});

test('the scrape token matches itself only, whatever the lengths', (t) => {
  fc.assert(
    fc.property(
      fc.string({ minLength: 16, maxLength: 64 }),
      fc.option(fc.string({ maxLength: 80 })),
      (token, other) => {
        t.true(scrapeTokenMatches(token, token));
        t.is(scrapeTokenMatches(token, other ?? undefined), other === token);
      },
    ),
  );
});

test('the traces URL: the traces endpoint as given, else the base endpoint with /v1/traces', (t) => {
  t.is(tracesUrl({ otlpEndpoint: null, otlpTracesEndpoint: null }), null);
  t.is(tracesUrl({ otlpEndpoint: 'http://c:4318', otlpTracesEndpoint: null }), 'http://c:4318/v1/traces');
  t.is(tracesUrl({ otlpEndpoint: 'http://c:4318/', otlpTracesEndpoint: null }), 'http://c:4318/v1/traces');
  t.is(tracesUrl({ otlpEndpoint: 'http://c:4318', otlpTracesEndpoint: 'http://t:1/x' }), 'http://t:1/x');
});
