import { metrics, secondsSince } from '../lib/metrics.js';
import { inSpan } from '../lib/tracing.js';
import type { Store } from '../store/index.js';

/**
 * The store as the services see it, with every write measured: a `store.write` span (a child of
 * the request's, when there is one) and the store write latency series (commit and flush to disk:
 * a write resolves only once durable). Whatever the backend, nothing else about it changes: the
 * ambient transaction (reads and writes through `tables` inside `fn`), `inWrite`, `backend` and
 * `schemaVersion` are the store's own.
 */
export function instrumentStore(store: Store): Store {
  const write: Store['write'] = (fn, options) => {
    // A write inside a write joins it (one transaction): measured once, as the outer one.
    if (store.inWrite()) return store.write(fn, options);
    const started = performance.now();
    return inSpan('store.write', {}, () => store.write(fn, options)).then(
      (result) => {
        metrics.storeFlush.observe({ outcome: 'ok' }, secondsSince(started));
        return result;
      },
      (err: unknown) => {
        metrics.storeFlush.observe({ outcome: 'error' }, secondsSince(started));
        throw err;
      },
    );
  };
  return new Proxy(store, {
    get(target, property) {
      if (property === 'write') return write;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
