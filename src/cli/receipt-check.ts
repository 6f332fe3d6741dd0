import { loadKeySet, KeySetError } from '../receipts/key-set.js';
import type { ReceiptVerdict } from '../receipts/verdict.js';
import type { VerifyKeys } from '../receipts/verify.js';
import { CliFailure, EXIT } from './base-command.js';

/** `svc receipt verify`'s invalid receipt: exit 1, and under --json the verdict itself (already on stdout). */
export class InvalidReceipt extends CliFailure {
  readonly verdict: ReceiptVerdict;
  constructor(verdict: ReceiptVerdict) {
    super(`the receipt is not valid: ${verdict.reason ?? 'unknown reason'}`, {
      exit: EXIT.false,
      type: 'invalid_receipt',
    });
    this.verdict = verdict;
    this.skipOclifErrorHandling = true;
  }
}

/**
 * The key set an offline check trusts, from a file or a URL fetched once: a problem with a file
 * is a usage error (exit 2), with a URL "cannot reach" (exit 3); a warning goes to `warn`.
 */
export async function keySetFor(source: string, warn: (line: string) => void): Promise<VerifyKeys['jwks']> {
  const loaded = await loadKeySet(source).catch((err: unknown) => {
    if (!(err instanceof KeySetError)) throw err;
    throw new CliFailure(err.message, {
      exit: err.remote ? EXIT.unreachable : EXIT.usage,
      type: err.type,
      fix: err.fix,
    });
  });
  if (loaded.warning) warn(`warning: ${loaded.warning}`);
  return loaded.jwks;
}
