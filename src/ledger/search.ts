import type { LedgerParts } from './context.js';
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

/** A page of records, and where the next page starts (null at the end). */
export interface LedgerPage {
  data: LedgerRecord[];
  next: number | null;
}

/** How the console reads: a filter, an order, where to start (exclusive) and how many at most. */
export interface LedgerSearch {
  filter: LedgerFilter;
  order: 'asc' | 'desc';
  cursor?: number;
  limit: number;
}

/**
 * Records matching the filter, oldest first after `cursor` (`order: 'asc'`) or newest first before
 * it (`'desc'`). At most SCAN_LIMIT records are examined; `next` is the index to resume from (the
 * last one examined), or null at the end.
 */
export async function searchLedger(
  parts: Pick<LedgerParts, 'repo'>,
  wid: string,
  options: LedgerSearch,
): Promise<LedgerPage> {
  const { repo } = parts;
  const reverse = options.order === 'desc';
  const data: LedgerRecord[] = [];
  let cursor = options.cursor;
  let examined = 0;
  const chunk = Math.min(SCAN_LIMIT, Math.max(options.limit * 4, 200));
  for (;;) {
    const rows = await repo.entries(wid, {
      ...(cursor === undefined ? {} : { after: cursor }),
      reverse,
      limit: chunk,
    });
    for (const row of rows) {
      const record = JSON.parse(row.bytes) as LedgerRecord;
      cursor = record.index;
      examined += 1;
      if (matches(record, options.filter)) data.push(record);
      if (data.length === options.limit) {
        const more = reverse ? record.index > 0 : record.index < ((await repo.head(wid))?.size ?? 0) - 1;
        return { data, next: more ? record.index : null };
      }
      if (examined >= SCAN_LIMIT) {
        const more = rows.length === chunk || row !== rows[rows.length - 1];
        return { data, next: more ? record.index : null };
      }
    }
    if (rows.length < chunk) return { data, next: null };
  }
}
