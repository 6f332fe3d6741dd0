/**
 * A bounded in-memory cache whose entries are valid for one generation of a store counter
 * (store/generations.ts, docs/operations.md#what-the-server-caches). Invariants:
 * - An entry is returned only under the generation it was filled under. The caller reads the
 *   counter BEFORE the records it caches, so a write landing in between leaves the entry tagged
 *   with the older generation, and the next use, seeing the newer one, refills it.
 * - Seeing any other generation drops every entry at once; a value read under a generation that is
 *   no longer the current one is not kept. Nothing assumes the counter only grows.
 * - At most `max` entries; past that the least recently used goes. Nothing here touches the store.
 */
export class GenerationCache<K, V> {
  private generation: number | undefined;
  private readonly entries = new Map<K, V>();

  private readonly max: number;
  constructor(max: number) {
    this.max = max;
  }

  /** The value cached for `key` under `generation`, or undefined. */
  get(generation: number, key: K): V | undefined {
    if (generation !== this.generation) {
      this.entries.clear();
      this.generation = generation;
      return undefined;
    }
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    // Most recently used last (a Map keeps insertion order).
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  /** Caches `value` for `key`, read after the counter showed `generation`. */
  set(generation: number, key: K, value: V): void {
    if (generation !== this.generation) return;
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as K);
  }

  get size(): number {
    return this.entries.size;
  }
}
