import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { TestFn } from 'ava';
import fc from 'fast-check';
import { AppError } from '../../src/errors/app-error.js';
import type { Store, Tables as WriteTx } from '../../src/store/types.js';
import { compareKeys, encodeKey, hasPrefix, MAX_KEY_BYTES } from '../../src/store/tuple-key.js';
import type { KeyPart, ScanOptions } from '../../src/store/types.js';
import { ROOT } from '../helpers/process.js';

/**
 * The store contract: what the store the domains use (src/store/types.ts) keeps over every backend (src/store/kv.ts),
 * run with the same tests against LMDB (contract-lmdb.test.ts) and PostgreSQL
 * (contract-postgres.test.ts). `open` gives a fresh, empty store and the spec a second process
 * needs to open the same one (kv-child.ts).
 */

export interface Backend {
  name: string;
  /** A fresh empty store; `spec` opens the same store from another process. */
  open(): Promise<{ store: Store; spec: { dataDir: string; url?: string }; reopen(): Promise<Store> }>;
}

const CHILD = `${ROOT}/test/store/kv-child.ts`;

/** Runs kv-child.ts; `onLine` sees each output line; resolves with the exit code and every line. */
function child(spec: object, args: string[], onLine?: (line: string, kill: () => void) => void) {
  const proc = spawn(process.execPath, ['--import=tsx', CHILD, JSON.stringify(spec), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  createInterface({ input: proc.stdout }).on('line', (line) => {
    lines.push(line);
    onLine?.(line, () => proc.kill('SIGKILL'));
  });
  return new Promise<{ code: number | null; signal: string | null; lines: string[]; stderr: string }>((resolve) =>
    proc.on('close', (code, signal) => resolve({ code, signal, lines, stderr })),
  );
}

/**
 * Another process opening the store and closing it again for `ms` (kv-child.ts `reopen`); `onOpen`
 * is called once it has the store open the first time.
 */
export async function reopenFromAnotherProcess(dataDir: string, ms: number, onOpen: () => void) {
  return child({ dataDir }, ['reopen', String(ms)], (line) => {
    if (line === 'opened') onOpen();
  });
}

/** One write of periodUsage[key] = value by another process (kv-child.ts `put`). */
export async function putFromAnotherProcess(dataDir: string, key: string, value: number) {
  return child({ dataDir }, ['put', key, String(value)]);
}

/** A small element domain, so that generated keys share prefixes and `after` values hit. */
const part = fc.oneof(
  fc.constantFrom<KeyPart>('a', 'b', 'ab', '', 'é', 'Z', 'a\u0000', 'wid_1'),
  fc.constantFrom<KeyPart>(0, 1, -1, 2.5, 10, -1e9, 1e12),
);
/** Keys of three elements from `element`, and scan queries over them (at most `maxLimit`). */
export function keysAndQueries(element: fc.Arbitrary<KeyPart>, maxLimit: number) {
  const key = fc.tuple(element, element, element);
  const scan = fc.record(
    {
      prefix: fc.array(element, { maxLength: 2 }),
      after: fc.option(element, { nil: undefined }),
      limit: fc.option(fc.integer({ min: 1, max: maxLimit }), { nil: undefined }),
      reverse: fc.boolean(),
      startAfter: fc.option(key, { nil: undefined }),
    },
    { requiredKeys: ['prefix', 'reverse'] },
  );
  return { key3: key, query: scan };
}

const { key3, query } = keysAndQueries(part, 6);

export function modelScan(
  model: Map<string, { key: KeyPart[]; value: number }>,
  q: ScanOptions & { prefix: KeyPart[] },
) {
  let out = [...model.values()].filter((e) => hasPrefix(e.key, q.prefix));
  if (q.startAfter !== undefined) {
    const from = q.startAfter;
    out = out.filter((e) => compareKeys(e.key, from) > 0).sort((x, y) => compareKeys(x.key, y.key));
  } else {
    const n = q.prefix.length;
    const after = q.after;
    if (after !== undefined) {
      out = out.filter((e) => compareKeys([e.key[n]!], [after]) * (q.reverse ? -1 : 1) > 0);
    }
    out.sort((x, y) => compareKeys(x.key, y.key) * (q.reverse ? -1 : 1));
  }
  return q.limit === undefined ? out : out.slice(0, q.limit);
}

export function options(q: { after?: KeyPart; limit?: number; reverse: boolean; startAfter?: KeyPart[] }): ScanOptions {
  // startAfter is a forward walk on its own (types.ts): neither `after` nor `reverse` with it.
  if (q.startAfter !== undefined) return { startAfter: q.startAfter, ...(q.limit ? { limit: q.limit } : {}) };
  return {
    ...(q.after !== undefined ? { after: q.after } : {}),
    ...(q.limit !== undefined ? { limit: q.limit } : {}),
    reverse: q.reverse,
  };
}

export function contractSuite(test: TestFn, backend: Backend): void {
  const opened: Store[] = [];
  const fresh = async () => {
    const o = await backend.open();
    opened.push(o.store);
    return o;
  };
  test.after.always(async () => {
    for (const s of opened) await s.close().catch(() => undefined);
  });

  test(`${backend.name}: a write that throws applies nothing, and its error passes through`, async (t) => {
    const { store } = await fresh();
    const boom = new Error('boom');
    const err = await t.throwsAsync(
      store.write(async (tx) => {
        await tx.periodUsage.put('x', 1);
        await tx.drills.put(['w', 't'], 'now');
        t.is(await tx.periodUsage.get('x'), 1, 'the write sees its own put');
        throw boom;
      }),
    );
    t.is(err, boom);
    t.is(await store.tables.periodUsage.get('x'), undefined);
    t.false(await store.tables.drills.has(['w', 't']));
  });

  test(`${backend.name}: a domain error (AppError) passes through unchanged, nothing applied`, async (t) => {
    const { store } = await fresh();
    const domain = new AppError('not_found', { message: 'no such agent' });
    const err = await t.throwsAsync(
      store.write(async (tx) => {
        await tx.periodUsage.put('y', 2);
        throw domain;
      }),
    );
    t.is(err, domain);
    t.is(err?.name, 'AppError');
    t.is(await store.tables.periodUsage.get('y'), undefined);
  });

  test(`${backend.name}: a key up to MAX_KEY_BYTES works; a longer one is 400 invalid_request at every operation, nothing applied`, async (t) => {
    const { store } = await fresh();
    // The longest key of each shape that fits, and one a byte longer (its encoding: tuple-key.ts).
    const fits = ['w', 'x'.repeat(MAX_KEY_BYTES - 5)];
    const over = ['w', 'x'.repeat(MAX_KEY_BYTES - 4)];
    t.is(encodeKey(fits).length, MAX_KEY_BYTES);
    await store.write(async (tx) => tx.periodUsage.put(fits, 1));
    t.is(await store.tables.periodUsage.get(fits), 1);
    t.is((await store.tables.periodUsage.scan(['w'], { after: fits[1]! })).length, 0);
    const tooLong = async (run: () => Promise<unknown>, what: string) => {
      const err = await t.throwsAsync(run, undefined, what);
      t.is((err as AppError | undefined)?.type, 'invalid_request', what);
      t.is((err as AppError | undefined)?.status, 400, what);
    };
    const usage = store.tables.periodUsage;
    for (const key of [over, 'é'.repeat(1_000), ['a', 1, 'b'.repeat(4_093)]]) {
      await tooLong(() => usage.get(key), 'get');
      await tooLong(() => usage.has(key), 'has');
      await tooLong(() => usage.scan(Array.isArray(key) ? key : [key]), 'scan');
      await tooLong(() => usage.scan(['w'], { startAfter: Array.isArray(key) ? key : [key] }), 'scan startAfter');
      await tooLong(() => usage.scan(['w'], { after: 'y'.repeat(MAX_KEY_BYTES) }), 'scan after');
      await tooLong(
        () =>
          store.write(async (tx) => {
            await tx.periodUsage.put(['w', 'applied?'], 2);
            await tx.periodUsage.put(key, 1);
          }),
        'put',
      );
      await tooLong(() => store.write(async (tx) => tx.periodUsage.remove(key)), 'remove');
    }
    t.false(await usage.has(['w', 'applied?']), 'nothing of the refused write was applied');
  });

  test(`${backend.name}: values round-trip exactly; remove; has; schema version`, async (t) => {
    const { store } = await fresh();
    t.is(await store.schemaVersion(), 0);
    const value = { a: 1.5, b: [1, 'x', null, true], c: { z: 1, a: 2 }, big: 2 ** 53 - 1, tiny: 1e-7, s: 'é\u0000😀' };
    await store.write(async (tx) => {
      await tx.meta.put('schemaVersion', 4);
      await tx.meta.put('v', value);
      await tx.periodUsage.put(['w', 'gone'], 1);
    });
    t.is(await store.schemaVersion(), 4);
    const back = await store.tables.meta.get('v');
    t.deepEqual(back, value);
    t.is(JSON.stringify(back), JSON.stringify(value), 'object key order kept');
    await store.write(async (tx) => tx.periodUsage.remove(['w', 'gone']));
    t.false(await store.tables.periodUsage.has(['w', 'gone']));
    t.deepEqual(await store.tables.periodUsage.scan(['w']), []);
  });

  test(`${backend.name}: scans agree with an in-memory model (prefix, after, limit, reverse, startAfter)`, async (t) => {
    const { store } = await fresh();
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(key3, { maxLength: 14, selector: (k) => JSON.stringify(k) }),
        fc.array(query, { minLength: 1, maxLength: 4 }),
        async (keys, queries) => {
          // Each round in its own first element space, so that rounds never see each other.
          const space = `r${round++}`;
          const model = new Map<string, { key: KeyPart[]; value: number }>();
          await store.write(async (tx) => {
            for (const [i, k] of keys.entries()) await tx.periodUsage.put([space, ...k], i);
          });
          for (const [i, k] of keys.entries()) model.set(JSON.stringify(k), { key: [space, ...k], value: i });
          for (const q of queries) {
            const prefix = [space, ...q.prefix];
            const got = await store.tables.periodUsage.scan(prefix, options(q));
            const want = modelScan(model, { ...options(q), prefix });
            if (JSON.stringify(got) !== JSON.stringify(want)) {
              t.log({ keys, q, got, want });
              return false;
            }
          }
          return true;
        },
      ),
      { numRuns: 60 },
    );
    t.pass();
  });

  test(`${backend.name}: scans inside a write see its own puts and removes`, async (t) => {
    const { store } = await fresh();
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(key3, { maxLength: 10, selector: (k) => JSON.stringify(k) }),
        fc.array(fc.tuple(key3, fc.boolean()), { maxLength: 6 }),
        query,
        async (stored, ops, q) => {
          const space = `w${round++}`;
          const model = new Map<string, { key: KeyPart[]; value: number }>();
          await store.write(async (tx) => {
            for (const [i, k] of stored.entries()) await tx.periodUsage.put([space, ...k], i);
          });
          for (const [i, k] of stored.entries()) model.set(JSON.stringify(k), { key: [space, ...k], value: i });
          const prefix = [space, ...q.prefix];
          const got = await store.write(async (tx: WriteTx) => {
            for (const [j, [k, remove]] of ops.entries()) {
              if (remove) await tx.periodUsage.remove([space, ...k]);
              else await tx.periodUsage.put([space, ...k], 100 + j);
            }
            return tx.periodUsage.scan(prefix, options(q));
          });
          for (const [j, [k, remove]] of ops.entries()) {
            if (remove) model.delete(JSON.stringify(k));
            else model.set(JSON.stringify(k), { key: [space, ...k], value: 100 + j });
          }
          const want = modelScan(model, { ...options(q), prefix });
          if (JSON.stringify(got) !== JSON.stringify(want)) {
            t.log({ stored, ops, q, got, want });
            return false;
          }
          return true;
        },
      ),
      { numRuns: 40 },
    );
    t.pass();
  });

  test(`${backend.name}: concurrent read-modify-write increments in one process give exactly N`, async (t) => {
    const { store } = await fresh();
    await Promise.all(
      Array.from({ length: 60 }, () =>
        store.write(async (tx) => {
          const n = (await tx.periodUsage.get('counter')) ?? 0;
          await tx.periodUsage.put('counter', n + 1);
        }),
      ),
    );
    t.is(await store.tables.periodUsage.get('counter'), 60);
  });

  test(`${backend.name}: increments from two processes at once give exactly N`, async (t) => {
    const { store, spec } = await fresh();
    const [a, b] = await Promise.all([child(spec, ['inc', '60', '6']), child(spec, ['inc', '60', '6'])]);
    t.is(a.code, 0, a.stderr);
    t.is(b.code, 0, b.stderr);
    t.is(await store.tables.periodUsage.get('counter'), 120);
  });

  test(`${backend.name}: increments serialized on rows of their own and plain ones, from two processes at once, give exactly N`, async (t) => {
    const { store, spec } = await fresh();
    const [a, b] = await Promise.all([child(spec, ['inc-on', '60', '6']), child(spec, ['inc', '60', '6'])]);
    t.is(a.code, 0, a.stderr);
    t.is(b.code, 0, b.stderr);
    t.is(await store.tables.periodUsage.get('counter'), 120);
  });

  test(`${backend.name}: getMany answers in the order asked, absent keys included; inside a write it sees the write's own puts and removes`, async (t) => {
    const { store } = await fresh();
    await store.write(async (tx) => {
      await tx.periodUsage.put(['m', 1], 1);
      await tx.periodUsage.put(['m', 2], 2);
      await tx.periodUsage.put(['m', 3], 3);
    });
    t.deepEqual(
      await store.tables.periodUsage.getMany([
        ['m', 3],
        ['m', 9],
        ['m', 1],
      ]),
      [3, undefined, 1],
    );
    t.deepEqual(await store.tables.periodUsage.getMany([]), []);
    const seen = await store.write(async (tx) => {
      const before = await tx.periodUsage.getMany([
        ['m', 1],
        ['m', 2],
        ['m', 4],
      ]);
      await tx.periodUsage.put(['m', 4], 4);
      await tx.periodUsage.remove(['m', 1]);
      await tx.periodUsage.put(['m', 2], 20);
      const after = await tx.periodUsage.getMany([
        ['m', 1],
        ['m', 2],
        ['m', 4],
        ['m', 3],
      ]);
      const scanned = (await tx.periodUsage.scan(['m'])).map((e) => e.value);
      return { before, after, scanned, one: await tx.periodUsage.get(['m', 2]) };
    });
    t.deepEqual(seen, { before: [1, 2, undefined], after: [undefined, 20, 4, 3], scanned: [20, 3, 4], one: 20 });
    t.deepEqual(
      await store.tables.periodUsage.getMany([
        ['m', 1],
        ['m', 2],
        ['m', 3],
        ['m', 4],
      ]),
      [undefined, 20, 3, 4],
    );
    // A write that reads many, writes, then throws applies nothing.
    await t.throwsAsync(
      store.write(async (tx) => {
        await tx.periodUsage.getMany([
          ['m', 2],
          ['m', 3],
        ]);
        await tx.periodUsage.put(['m', 2], 200);
        await tx.periodUsage.put(['m', 5], 5);
        throw new Error('changed my mind');
      }),
      { message: 'changed my mind' },
    );
    t.deepEqual(
      await store.tables.periodUsage.getMany([
        ['m', 2],
        ['m', 5],
      ]),
      [20, undefined],
    );
  });

  test(`${backend.name}: a write serialized on a row reads its own writes, and a key inside a range it scanned without asking again`, async (t) => {
    const { store } = await fresh();
    await store.write(async (tx) => {
      await tx.periodUsage.put(['u', 'a', '2026-01-01'], 5);
      await tx.periodUsage.put(['u', 'a', '2026-01-03'], 7);
    });
    const got = await store.write(
      async (tx) => {
        const sum = (await tx.periodUsage.scan(['u', 'a'], { after: '2026-01-01' })).reduce((n, e) => n + e.value, 0);
        const absent = await tx.periodUsage.get(['u', 'a', '2026-01-02']);
        await tx.periodUsage.put(['u', 'a', '2026-01-02'], 1);
        await tx.periodUsage.put(['u', 'a', '2026-01-03'], 8);
        const again = (await tx.periodUsage.scan(['u', 'a'])).map((e) => e.value);
        return { sum, absent, again, read: await tx.periodUsage.get(['u', 'a', '2026-01-02']) };
      },
      { serializeOn: [['agents', ['w', 'a']]] },
    );
    t.deepEqual(got, { sum: 7, absent: undefined, again: [5, 1, 8], read: 1 });
    t.deepEqual(
      (await store.tables.periodUsage.scan(['u', 'a'])).map((e) => e.value),
      [5, 1, 8],
    );
  });

  test(`${backend.name}: another process's write is seen by the next read`, async (t) => {
    const { store, spec } = await fresh();
    t.is(await store.tables.periodUsage.get('frozen'), undefined);
    const done = await child(spec, ['put', 'frozen', '7']);
    t.deepEqual(done.lines, ['ok'], done.stderr);
    t.is(await store.tables.periodUsage.get('frozen'), 7);
    t.is(await store.write(async (tx) => tx.periodUsage.get('frozen')), 7);
  });

  test(`${backend.name}: every acknowledged write survives kill -9 of the writer`, async (t) => {
    const { spec, reopen } = await fresh();
    const acked: number[] = [];
    const result = await child(spec, ['ack'], (line, kill) => {
      acked.push(Number(line));
      if (acked.length === 150) kill();
    });
    t.is(result.signal, 'SIGKILL', result.stderr);
    const again = await reopen();
    opened.push(again);
    const stored = new Set((await again.tables.periodUsage.scan(['ack'])).map((e) => e.value));
    t.true(acked.length >= 150);
    t.deepEqual(
      acked.filter((i) => !stored.has(i)),
      [],
      'no acknowledged write is missing',
    );
  });

  test(`${backend.name}: a write function that conflicts runs again and applies once`, async (t) => {
    const { store, spec } = await fresh();
    await store.write(async (tx) => tx.periodUsage.put('c', 10));
    let runs = 0;
    // Another process (the CLI, another instance) changes what this write read before it commits:
    // a conflict. (Within one process, LMDB's writes queue and never conflict with each other.)
    const out = await store.write(async (tx) => {
      runs++;
      const n = (await tx.periodUsage.get('c')) ?? 0;
      if (runs === 1) {
        const other = await child(spec, ['put', 'c', '20']);
        t.deepEqual(other.lines, ['ok'], other.stderr);
      }
      await tx.periodUsage.put('c', n + 1);
      return n;
    });
    t.is(runs, 2);
    t.is(out, 20);
    t.is(await store.tables.periodUsage.get('c'), 21);
  });

  test(`${backend.name}: a transaction cannot be used after its write function ended`, async (t) => {
    const { store } = await fresh();
    let kept: WriteTx | undefined;
    await store.write(async (tx) => {
      kept = tx;
      await tx.periodUsage.put('k', 1);
    });
    await t.throwsAsync(kept!.periodUsage.put('k', 2), {
      message: /after its write function ended|only allowed inside store\.write/,
    });
    t.is(await store.tables.periodUsage.get('k'), 1);
  });
}
