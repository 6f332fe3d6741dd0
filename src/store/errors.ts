/** Why the store could not be opened or used; the CLI maps these to exit status 3. */
export type StoreErrorCode = 'newer_schema' | 'older_schema' | 'cannot_open' | 'write_failed';

export class StoreError extends Error {
  readonly code: StoreErrorCode;

  constructor(code: StoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
    this.code = code;
  }
}
