import test from 'ava';
import fc from 'fast-check';
import { compareKeys, decodeKey, encodeKey } from '../../src/store/tuple-key.js';
import type { KeyPart } from '../../src/store/types.js';

/** The PostgreSQL key encoding: its byte order is the store's tuple order, and it decodes back. */

const part = fc.oneof(
  fc.string({ unit: 'grapheme-composite' }),
  fc.string({ unit: 'binary' }),
  fc.constantFrom<KeyPart>('', '\u0000', 'a\u0000', 'a\u0000b', '\uffff', '😀'),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.constantFrom<KeyPart>(0, -0, 1, -1, Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE),
);
const tuple = fc.array(part, { maxLength: 4 });
const sign = (n: number) => Math.sign(n);

test('byte order of encoded keys equals the tuple order', (t) => {
  fc.assert(
    fc.property(tuple, tuple, (a, b) => sign(Buffer.compare(encodeKey(a), encodeKey(b))) === sign(compareKeys(a, b))),
    { numRuns: 5000 },
  );
  t.pass();
});

test('shared prefixes: a tuple sorts before its extensions, and prefix + 0xFF after all of them', (t) => {
  fc.assert(
    fc.property(tuple, fc.array(part, { minLength: 1, maxLength: 3 }), (prefix, rest) => {
      const p = encodeKey(prefix);
      const k = encodeKey([...prefix, ...rest]);
      return Buffer.compare(p, k) < 0 && Buffer.compare(k, Buffer.concat([p, Buffer.from([0xff])])) < 0;
    }),
  );
  t.pass();
});

test('keys decode to what was encoded (-0 as 0); a bare string is its one-element tuple', (t) => {
  fc.assert(
    fc.property(tuple, (a) => {
      const back = decodeKey(encodeKey(a));
      return (
        JSON.stringify(back) === JSON.stringify(a.map((x) => (Object.is(x, -0) ? 0 : x))) &&
        !back.some((x) => Object.is(x, -0))
      );
    }),
    { numRuns: 2000 },
  );
  t.deepEqual(encodeKey('wid_1'), encodeKey(['wid_1']));
  t.throws(() => encodeKey([Number.NaN]), { instanceOf: TypeError });
  t.throws(() => encodeKey([true as unknown as string]), { instanceOf: TypeError });
});
