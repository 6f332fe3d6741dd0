/**
 * Why the store could not be opened or used; the CLI maps these to exit status 3. `no_space`: a
 * write failed because the store cannot grow (disk or quota full) or its disk is read-only; nothing
 * of it was applied, and writes can succeed again once space returns.
 */
export type StoreErrorCode = 'newer_schema' | 'older_schema' | 'cannot_open' | 'write_failed' | 'no_space';

export class StoreError extends Error {
  readonly code: StoreErrorCode;

  constructor(code: StoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
    this.code = code;
  }
}
