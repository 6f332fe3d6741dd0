import test from 'ava';
import { GenerationCache } from '../../src/lib/generation-cache.js';

/** The cache behind every generation counter: bounded, and valid for one generation only. */

test('an entry is returned only under the generation it was filled under; another generation empties the cache', (t) => {
  const cache = new GenerationCache<string, number>(10);
  t.is(cache.get(3, 'a'), undefined);
  cache.set(3, 'a', 1);
  t.is(cache.get(3, 'a'), 1);
  t.is(cache.get(4, 'a'), undefined, 'a newer counter: refilled');
  t.is(cache.size, 0);
  cache.set(4, 'a', 2);
  t.is(cache.get(2, 'a'), undefined, 'an older counter (a store restored) is not trusted either');
  t.is(cache.get(4, 'a'), undefined, 'and what was cached before it is gone');
});

test('a value read under a generation that is no longer current is not kept', (t) => {
  const cache = new GenerationCache<string, number>(10);
  t.is(cache.get(1, 'slow'), undefined);
  // Another request sees the counter move on before the first one stores what it read.
  t.is(cache.get(2, 'fast'), undefined);
  cache.set(1, 'slow', 1);
  t.is(cache.get(2, 'slow'), undefined);
  t.is(cache.size, 0);
});

test('at most max entries; the least recently used goes first', (t) => {
  const cache = new GenerationCache<number, number>(3);
  t.is(cache.get(0, 0), undefined);
  for (let i = 0; i < 3; i += 1) cache.set(0, i, i);
  t.is(cache.get(0, 0), 0, 'used: now the most recent');
  cache.set(0, 3, 3);
  t.is(cache.size, 3);
  t.is(cache.get(0, 1), undefined, 'the least recently used went');
  t.deepEqual(
    [0, 2, 3].map((k) => cache.get(0, k)),
    [0, 2, 3],
  );
  for (let i = 10; i < 1000; i += 1) cache.set(0, i, i);
  t.is(cache.size, 3);
});
