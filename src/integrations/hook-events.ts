import { isoAt, type Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import { integrationsRepo } from './repo.js';

/**
 * "Answer each provider event once" (a provider redelivers until it is answered), in one place for
 * every inbound integration.
 * The answer given to an event is kept in `hookEvents` under [wid, source, event id].
 * Rules:
 * - `processOnce(wid, source, id, fn)` runs `fn` inside one store write together with storing its
 *   answer: either both land or neither does, so a crash between them, or two deliveries of the
 *   same event at once, cannot leave a change without its answer or a change made twice. When
 *   the event already has an answer, `fn` does not run and that first answer is returned.
 * - `fn` runs inside the write (it may run more than once: store reads and writes only) and does
 *   every write the event makes: ledger records, stored charges, plan changes. Work that is its
 *   own write and already idempotent (the gate's authorize with the event id as idempotency key)
 *   is done before, outside.
 * - `onceInWrite` is the same for a caller already inside a write.
 * - `answered` is a read for a fast path only; `processOnce` decides.
 */
export type HookAnswer = Record<string, unknown>;

/** Each provider event answered once (the rules above). Reads and writes the `hookEvents` table. */
export interface HookEvents {
  /** The first answer given to an event, if it was processed (a read for a fast path only). */
  answered(wid: string, source: string, id: string): Promise<HookAnswer | undefined>;
  /** Runs `fn` and stores its answer in one write, once per event; a repeat gets the first answer. */
  processOnce<A extends HookAnswer>(wid: string, source: string, id: string, fn: () => Promise<A>): Promise<HookAnswer>;
  /** `processOnce` for a caller already inside a store write. */
  onceInWrite<A extends HookAnswer>(wid: string, source: string, id: string, fn: () => Promise<A>): Promise<HookAnswer>;
}

export function createHookEvents(deps: { store: Store; clock: Clock }): HookEvents {
  const { store, clock } = deps;
  const repo = integrationsRepo(store);

  const onceInWrite = async <A extends HookAnswer>(
    wid: string,
    source: string,
    id: string,
    fn: () => Promise<A>,
  ): Promise<HookAnswer> => {
    const seen = await repo.hookEvent(wid, source, id);
    if (seen) return seen.answer;
    const answer = await fn();
    await repo.putHookEvent(wid, source, id, { answer, at: isoAt(clock.now()) });
    return answer;
  };

  return {
    async answered(wid: string, source: string, id: string): Promise<HookAnswer | undefined> {
      return (await repo.hookEvent(wid, source, id))?.answer;
    },

    processOnce<A extends HookAnswer>(
      wid: string,
      source: string,
      id: string,
      fn: () => Promise<A>,
    ): Promise<HookAnswer> {
      return store.write(() => onceInWrite(wid, source, id, fn));
    },

    onceInWrite,
  };
}
