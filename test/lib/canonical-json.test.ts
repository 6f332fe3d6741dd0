import test from 'ava';
import fc from 'fast-check';
import { canonicalJson } from '../../src/lib/canonical-json.js';

// Known answers from RFC 8785 (sections 3.2.2, 3.2.3 and Appendix B) and from the test data of
// its reference implementation (cyberphone/json-canonicalization, testdata/ and README).

const double = (bits: string): number => {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${bits}`));
  return view.getFloat64(0);
};

test('RFC 8785 3.2.2: the worked example, parsed from its JSON text', (t) => {
  const input = String.raw`{
    "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  }`;
  const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;
  t.is(canonicalJson(JSON.parse(input)), expected);
});

test('reference implementation README sample: exact UTF-8 bytes', (t) => {
  const input = String.raw`{
    "numbers": [1E30, 4.50, 6, 2e-3, 0.000000000000000000000000001],
    "escaping": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "other":  [null, true, false]
  }`;
  // As printed in the README, spaces and line breaks aside.
  const hex = [
    '7b 22 65 73 63 61 70 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30 30 66 5c 6e 41 27 42 5c 22 5c 5c',
    '5c 5c 5c 22 2f 22 2c 22 6e 75 6d 62 65 72 73 22 3a 5b 31 65 2b 33 30 2c 34 2e 35 2c 36 2c 30 2e',
    '30 30 32 2c 31 65 2d 32 37 5d 2c 22 6f 74 68 65 72 22 3a 5b 6e 75 6c 6c 2c 74 72 75 65 2c 66 61',
    '6c 73 65 5d 7d',
  ]
    .join(' ')
    .replaceAll(' ', '');
  t.is(Buffer.from(canonicalJson(JSON.parse(input)), 'utf8').toString('hex'), hex);
});

test('RFC 8785 Appendix B: number serialization', (t) => {
  const table: [string, string][] = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ];
  for (const [bits, text] of table) t.is(canonicalJson(double(bits)), text, bits);
  for (const bits of ['7fffffffffffffff', '7ff0000000000000', 'fff0000000000000']) {
    t.throws(() => canonicalJson(double(bits)), { instanceOf: TypeError }, bits);
  }
});

test('numbers named in the brief: 1e21, 1e-7, -0 and 333333333.33333329', (t) => {
  t.is(
    // The brief's literal, read as JavaScript reads it (it has more digits than a double keeps).
    canonicalJson([1e21, 1e-7, -0, Number('333333333.33333329'), 1e20, 1e-6]),
    '[1e+21,1e-7,0,333333333.3333333,100000000000000000000,0.000001]',
  );
});

test('RFC 8785 3.2.3: properties sorted by UTF-16 code units, non-ASCII included', (t) => {
  const input = {
    '\u20ac': 'Euro Sign',
    '\r': 'Carriage Return',
    '\ufb33': 'Hebrew Letter Dalet With Dagesh',
    '1': 'One',
    '\ud83d\ude00': 'Emoji: Grinning Face',
    '\u0080': 'Control',
    '\u00f6': 'Latin Small Letter O With Diaeresis',
  };
  t.is(
    canonicalJson(input),
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
      '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
  );
});

test('reference implementation weird.json: sorting and raw non-ASCII output', (t) => {
  const input = String.raw`{
    "\u20ac": "Euro Sign",
    "1": "One",
    "\u0080": "Control\u007f",
    "\ud83d\ude02": "Smiley",
    "\u00f6": "Latin Small Letter O With Diaeresis",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "</script>": "Browser Challenge"
  }`;
  t.is(
    canonicalJson(JSON.parse(input)),
    '{"1":"One","</script>":"Browser Challenge","\u0080":"Control\u007f","\u00f6":"Latin Small Letter O With Diaeresis",' +
      '"\u20ac":"Euro Sign","\ud83d\ude02":"Smiley","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
  );
});

test('RFC 8785 3.2.2.2: string escaping uses the short forms, lowercase \\u00xx for other controls, nothing else', (t) => {
  t.is(
    canonicalJson('\u0000\b\t\n\f\r"\\\u001f\u007f/\u2028é'),
    String.raw`"\u0000\b\t\n\f\r\"\\\u001f` + '\u007f/\u2028é"',
  );
});

test('literals, empty containers and nesting', (t) => {
  t.is(
    canonicalJson({ b: [], a: {}, c: [{ z: null, y: false }, true] }),
    '{"a":{},"b":[],"c":[{"y":false,"z":null},true]}',
  );
  t.is(canonicalJson(null), 'null');
  t.is(canonicalJson('x'), '"x"');
});

test('toJSON is applied once (Date, Buffer), boxed primitives are unwrapped, undefined members are omitted', (t) => {
  t.is(
    canonicalJson({ at: new Date(0), b: Buffer.from([1]) }),
    '{"at":"1970-01-01T00:00:00.000Z","b":{"data":[1],"type":"Buffer"}}',
  );
  t.is(canonicalJson([new Number(1), new String('s'), new Boolean(false)]), '[1,"s",false]');
  t.is(canonicalJson({ a: undefined, b: 1 }), '{"b":1}');
  t.is(canonicalJson(Object.assign(Object.create(null) as object, { k: 1 })), '{"k":1}');
});

test('rejects values JSON cannot represent exactly, with a TypeError', (t) => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  class Point {
    x = 1;
  }
  const bad: [string, unknown][] = [
    ['NaN', NaN],
    ['Infinity', { a: [Infinity] }],
    ['-Infinity', -Infinity],
    ['undefined at the top', undefined],
    ['undefined in an array', [1, undefined]],
    ['BigInt', { n: 1n }],
    ['symbol', [Symbol('s')]],
    ['function', { f: () => 1 }],
    ['lone surrogate in a value', { s: 'a\ud800' }],
    ['lone surrogate in a key', { ['\udc00']: 1 }],
    ['cycle', cyclic],
    ['Map', { m: new Map([[1, 2]]) }],
    ['Set', new Set([1])],
    ['typed array', new Uint8Array(2)],
    ['class instance', new Point()],
  ];
  for (const [name, value] of bad) t.throws(() => canonicalJson(value), { instanceOf: TypeError }, name);
});

test('the same object shared twice is not a cycle', (t) => {
  const shared = { v: 1 };
  t.is(canonicalJson({ a: shared, b: [shared] }), '{"a":{"v":1},"b":[{"v":1}]}');
});

/** The same JSON value with every object's keys inserted in another order. */
function reorder(value: unknown, rotate: number): unknown {
  if (Array.isArray(value)) return value.map((item) => reorder(item, rotate));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value).map(([k, v]) => [k, reorder(v, rotate)] as const);
  const shift = entries.length === 0 ? 0 : rotate % entries.length;
  return Object.fromEntries([...entries.slice(shift), ...entries.slice(0, shift)].reverse());
}

test('property: key insertion order never changes the output, and the output parses back to the value', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), (value, rotate) => {
        const text = canonicalJson(value);
        if (canonicalJson(reorder(value, rotate)) !== text) return false;
        // Any JSON text of the value, including the canonical one, canonicalizes to the same string.
        return canonicalJson(JSON.parse(text)) === text && canonicalJson(JSON.parse(JSON.stringify(value))) === text;
      }),
      { numRuns: 300 },
    ),
  );
});

test('property: members come out sorted by UTF-16 code units, whatever the keys', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(fc.dictionary(fc.string({ unit: 'binary' }), fc.integer()), (object) => {
        // Array.prototype.sort without a comparator orders by UTF-16 code units, as RFC 8785 3.2.3 asks.
        const members = Object.keys(object)
          .sort()
          .map((key) => `${JSON.stringify(key)}:${object[key]}`);
        return canonicalJson(object) === `{${members.join(',')}}`;
      }),
    ),
  );
});
