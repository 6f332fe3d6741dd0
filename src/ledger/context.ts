import type { Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { SigningKeys } from '../signing/service.js';
import type { Store } from '../store/index.js';
import type { LedgerHead } from './records.js';
import type { LedgerRepo } from './repo.js';

/** What the ledger is made from. `originHost` names the ledger in its checkpoints: <host>/<wid>. */
export interface LedgerDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  /** The ledger key signs the checkpoints; the JWKS goes into verification and the evidence bundle. */
  signingKeys: SigningKeys;
  originHost: string;
}

/** What the ledger's operations (append.ts, checkpoint.ts, ...) share: its deps and its repo. */
export interface LedgerParts extends LedgerDeps {
  repo: LedgerRepo;
}

/** The head of a ledger that has no record yet. */
export const emptyHead = (): LedgerHead => ({ size: 0, checkpointSize: 0, checkpointFrontier: [], origin: '' });

/**
 * The ledger's origin. It is fixed by the first checkpoint, which the server signs with its own
 * public address: a record written first by the CLI (which may not know that address) cannot set it.
 */
export const originOf = (parts: Pick<LedgerParts, 'originHost'>, wid: string, head: LedgerHead): string =>
  head.origin || `${parts.originHost}/${wid}`;
