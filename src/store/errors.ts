/**
 * Why the store could not be opened or used; the CLI maps these to exit status 3. `no_space`: a
 * write failed because the store cannot grow (disk or quota full) or its disk is read-only; nothing
 * of it was applied, and writes can succeed again once space returns. `disk_error`: the disk answered
 * a write with an I/O error; nothing of it was applied. `unavailable`: the database
 * server cannot be reached or the connection was lost mid-request (PostgreSQL); `conflict`: a write
 * function kept conflicting with concurrent writers past the retry bound (`unsupported`: an operation
 * the backend does not offer, e.g. `backup` on PostgreSQL). `damaged`: a read or write met damage
 * inside the LMDB file (damage.ts); the CLI says `store_damaged`, the HTTP layer answers 503. Nothing of a write that
 * failed with either was applied; the HTTP layer answers both with 503 (try again).
 */
export type StoreErrorCode =
  | 'newer_schema'
  | 'older_schema'
  | 'cannot_open'
  | 'write_failed'
  | 'no_space'
  | 'disk_error'
  | 'unavailable'
  | 'conflict'
  | 'unsupported'
  | 'damaged';

export class StoreError extends Error {
  readonly code: StoreErrorCode;

  constructor(code: StoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
    this.code = code;
  }
}
