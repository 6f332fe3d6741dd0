import type { LedgerRecord } from './records.js';

/**
 * Filters for reading a workspace's ledger in the console (GET /api/w/{wid}/ledger with `kind`,
 * `actor`, `subject`, `from`, `to`, `order`).
 * Rules:
 * - `kind` matches the record's kind, or every kind under it: `agent` matches `agent.stopped`.
 * - `actor` matches the whole actor (`agent:agt_…`) or what follows its prefix (`agt_…`).
 * - `subject` matches exactly; `from` (inclusive) and `to` (exclusive) bound the record's time.
 * - A filtered read examines at most SCAN_LIMIT records per page, so a filter that matches
 *   nothing in a long ledger still answers quickly; `next` then resumes where it stopped.
 */
export const SCAN_LIMIT = 5000;

export interface LedgerFilter {
  kind?: string;
  actor?: string;
  subject?: string;
  /** ISO 8601, inclusive. */
  from?: string;
  /** ISO 8601, exclusive. */
  to?: string;
}

export function hasFilter(filter: LedgerFilter): boolean {
  return Object.values(filter).some((v) => v !== undefined && v !== '');
}

export function matches(record: LedgerRecord, filter: LedgerFilter): boolean {
  if (filter.kind && record.kind !== filter.kind && !record.kind.startsWith(`${filter.kind}.`)) return false;
  if (
    filter.actor &&
    record.actor !== filter.actor &&
    record.actor.slice(record.actor.indexOf(':') + 1) !== filter.actor
  )
    return false;
  if (filter.subject && record.subject !== filter.subject) return false;
  if (filter.from && record.at < filter.from) return false;
  if (filter.to && record.at >= filter.to) return false;
  return true;
}
