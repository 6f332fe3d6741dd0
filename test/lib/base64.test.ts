import test from 'ava';
import fc from 'fast-check';
import { isPaddedBase64 } from '../../src/lib/base64.js';

/**
 * Standard padded base64 (src/lib/base64.ts, read by the ledger's signed notes and MCP's
 * base64-encoded parameter headers): every encoding of bytes is accepted and nothing else is; a
 * text of ten megabytes is answered at once, where the usual regular expression overflowed its
 * stack.
 */
test('every standard encoding of bytes is padded base64', (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => isPaddedBase64(Buffer.from(bytes).toString('base64'))),
  );
  t.pass();
});

test('anything else is not: wrong length, other characters, padding inside or too long', (t) => {
  for (const text of ['A', 'AB', 'ABC', 'AB=', 'A===', '====', 'AB=C', 'AB==ABCD', 'ABC-', 'AB_C', 'ABC\n', 'ABCDE==='])
    t.false(isPaddedBase64(text), text);
  for (const text of ['', 'ABCD', 'AB==', 'ABC=', '+/+/', 'ABCDEF==']) t.true(isPaddedBase64(text), text);
});

test('ten megabytes are answered at once, with no stack overflow', (t) => {
  const started = performance.now();
  t.true(isPaddedBase64('A'.repeat(10_000_000)));
  t.false(isPaddedBase64(`${'A'.repeat(9_999_999)}!`));
  const ms = performance.now() - started;
  t.log(`${ms.toFixed(0)} ms`);
  // Linear over one class: tens of milliseconds; the repeated-group pattern threw a RangeError here.
  t.true(ms < 5_000, `${ms} ms`);
});
