import type { Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import { integrationsRepo } from './repo.js';

/**
 * Identifiers an inbound integration accepts once (each Security Event Token's `jti` once, each chat
 * signature once; a chat button token is not used up by a click, since a two-person rule needs
 * two people to press the same button), remembered in the store for their validity window so
 * that a replay is refused across restarts.
 * - `claim` reads, checks and writes in one store write (the caller's, or its own): true the
 *   first time, false while the identifier is remembered, so two instances never both accept it.
 *   An entry past its window is as good as absent (the sweeper removes it: retention/policy.ts).
 */
/** Identifiers accepted once (the rules above). Reads and writes the `once` table. */
export interface Once {
  /** Marks `id` used in `scope` until `untilMs`; false when it already was. Joins the caller's write, if any. */
  claim(scope: string, id: string, untilMs: number): Promise<boolean>;
  /** Whether `id` is in use in `scope` (read-only; a claim decides). */
  used(scope: string, id: string): Promise<boolean>;
}

export function createOnce(deps: { store: Store; clock: Clock }): Once {
  const { store, clock } = deps;
  const repo = integrationsRepo(store);

  return {
    claim(scope: string, id: string, untilMs: number): Promise<boolean> {
      return store.write(async () => {
        const until = await repo.onceUntil(scope, id);
        if (until !== undefined && until > clock.now()) return false;
        await repo.putOnce(scope, id, untilMs);
        return true;
      });
    },

    async used(scope: string, id: string): Promise<boolean> {
      const until = await repo.onceUntil(scope, id);
      return until !== undefined && until > clock.now();
    },
  };
}
