import type { Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import type { PrincipalEnded } from '../lib/principal-ended.js';
import type { Store } from '../store/index.js';
import type { Lockouts } from './lockouts.js';
import type { MembersLedger } from './members.js';
import type { PeopleRepo } from './repo.js';

/** What the people service's operations share (service.ts builds it once; each operation file takes it). */
export interface PeopleContext {
  store: Store;
  clock: Clock;
  ids: IdSource;
  repo: PeopleRepo;
  lockouts: Lockouts;
  /** Seals two-factor secrets. */
  masterKey: Buffer;
  /** Derived from the master key: the recovery codes' hashes. */
  recoveryKey: Buffer;
  sessionTtlMs: number;
  ledger?: MembersLedger | undefined;
  principalEnded: PrincipalEnded;
}
