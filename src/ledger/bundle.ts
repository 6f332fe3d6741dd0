import { readFileSync } from 'node:fs';
import { fileProblem } from '../errors/system.js';
import type { LedgerVerifyInput } from './verify.js';

/** A file the evidence bundle's verification cannot read (a usage error: exit 2). */
export class BundleReadError extends Error {
  override name = 'BundleReadError';
}

function readJson(file: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new BundleReadError(`cannot read the ${what} ${file}: ${fileProblem(err)}`, { cause: err });
  }
}

/**
 * An evidence bundle file (GET /v1/admin/evidence, docs/gate.md#ledger) as the ledger verifier's input, with
 * the key set of `jwksFile` when one is given (else the bundle's own). A bundle's records may be
 * record objects (hashed in their RFC 8785 form) or { bytes } with the decoded `record` beside
 * them, which must then be exactly the parse of the bytes (the verifier checks it). Its `waiting`
 * records (not yet integrated) are read the same way and checked against their own hashes.
 */
export function readBundle(bundleFile: string, jwksFile?: string): LedgerVerifyInput {
  const bundle = readJson(bundleFile, 'bundle') as Record<string, unknown>;
  const jwks = jwksFile ? readJson(jwksFile, 'JWKS file') : undefined;
  const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  const entry = (r: unknown): LedgerVerifyInput['records'][number] => {
    const e = r as { bytes?: unknown; leaf?: unknown; record?: unknown };
    if (r && typeof r === 'object' && typeof e.bytes === 'string') {
      return {
        bytes: e.bytes,
        ...(typeof e.leaf === 'string' ? { leaf: e.leaf } : {}),
        ...('record' in e ? { record: e.record } : {}),
      };
    }
    return { bytes: JSON.stringify(r) };
  };
  return {
    origin: String(bundle.origin ?? ''),
    records: list(bundle.records).map(entry),
    waiting: list(bundle.waiting).map(entry),
    consistency: list(bundle.consistency) as LedgerVerifyInput['consistency'],
    checkpoints: list(bundle.checkpoints).map((c) => ({
      note: typeof c === 'string' ? c : String((c as { note?: unknown }).note ?? ''),
    })),
    jwks: (jwks ?? bundle.jwks ?? { keys: [] }) as { keys: object[] },
  };
}
