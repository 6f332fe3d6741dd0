import type { Clock } from '../lib/clock.js';
import { periodic } from '../lib/outbound.js';
import type { Store } from '../store/index.js';

/**
 * Identifiers an inbound integration accepts once (SPEC.md 8.1: each `jti` once, each chat
 * signature once; a chat button token is not used up by a click, since a two-person rule needs
 * two people to press the same button), remembered in the store for their validity window so
 * that a replay is refused across restarts.
 * - `claim` runs inside a store write: true the first time, false while the identifier is
 *   remembered. An entry past its window is as good as absent (the sweep removes it).
 */
const SWEEP_EVERY_MS = 10 * 60_000;
/** How long the answer to a processed inbound event is kept for its redeliveries. */
export const HOOK_EVENT_RETENTION_MS = 30 * 86_400_000;

export function createOnce(deps: { store: Store; clock: Clock }) {
  const { store, clock } = deps;
  const t = store.tables;

  /**
   * Removes identifiers past their window, and the answers kept for processed events
   * (`hookEvents`) once HOOK_EVENT_RETENTION_MS old: far past any provider's retries (Stripe
   * retries for three days), so a redelivery still gets its first answer.
   */
  const sweep = async (): Promise<number> => {
    const now = clock.now();
    const stale = t.hookOnce
      .scan([])
      .filter((e) => e.value <= now)
      .map((e) => e.key);
    const answered = t.hookEvents
      .scan([])
      .filter((e) => Date.parse(e.value.at) < now - HOOK_EVENT_RETENTION_MS)
      .map((e) => e.key);
    if (stale.length === 0 && answered.length === 0) return 0;
    await store.write(() => {
      for (const key of stale) if ((t.hookOnce.get(key) ?? Infinity) <= now) t.hookOnce.remove(key);
      for (const key of answered) t.hookEvents.remove(key);
    });
    return stale.length + answered.length;
  };

  return {
    /** Inside a write: marks `id` used in `scope` until `untilMs`; false when it already was. */
    claim(scope: string, id: string, untilMs: number): boolean {
      const until = t.hookOnce.get([scope, id]);
      if (until !== undefined && until > clock.now()) return false;
      t.hookOnce.put([scope, id], untilMs);
      return true;
    },

    /** Whether `id` is in use in `scope` (read-only; a claim decides). */
    used(scope: string, id: string): boolean {
      const until = t.hookOnce.get([scope, id]);
      return until !== undefined && until > clock.now();
    },

    sweep,

    ...periodic(sweep, SWEEP_EVERY_MS),
  };
}

export type Once = ReturnType<typeof createOnce>;
