import type { Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';

/**
 * Identifiers an inbound integration accepts once (SPEC.md 8.1: each `jti` once, each chat
 * signature once; a chat button token is not used up by a click, since a two-person rule needs
 * two people to press the same button), remembered in the store for their validity window so
 * that a replay is refused across restarts.
 * - `claim` runs inside a store write: true the first time, false while the identifier is
 *   remembered. An entry past its window is as good as absent (the sweeper removes it:
 *   retention/policy.ts).
 */
export function createOnce(deps: { store: Store; clock: Clock }) {
  const { clock } = deps;
  const t = deps.store.tables;

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
  };
}

export type Once = ReturnType<typeof createOnce>;
