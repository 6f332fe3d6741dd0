import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/**
 * Checks an LMDB data file before LMDB maps it. LMDB trusts its file: a truncated file is mapped
 * past its end (the first read there kills the process with SIGBUS), and a meta page naming a root
 * outside the file sends it reading garbage (SIGSEGV). Neither can be caught once mapped, so the
 * few facts LMDB relies on are read here with plain reads, and a file that breaks one is refused
 * as damaged before any mapping.
 *
 * What is checked (the on-disk layout of the LMDB that lmdb-js 3 ships: a page header of
 * pgno u64, txnid u64, pad u16, flags u16, lower u16, upper u16; then the meta):
 * - the file holds at least the two meta pages (an empty file would be set up anew by LMDB,
 *   silently replacing a store by an empty one);
 * - each meta page says it is one (flag P_META), has LMDB's magic and the data version, and both
 *   agree on the page size, a power of two from 512 to 64 KiB;
 * - the meta LMDB will use (the higher transaction id) names a last page inside the file, and the
 *   roots of its two trees lie on pages that exist, each with a header naming that same page, a
 *   branch or leaf flag, and bounds inside the page.
 * Damage deeper in the trees is not seen here; `svc ledger verify` reads the ledger's records.
 */

const MAGIC = 0xbeefc0de;
const DATA_VERSION = 2;
const P_BRANCH = 0x01;
const P_LEAF = 0x02;
const P_META = 0x08;
const PAGE_HEADER = 24;
const INVALID_PAGE = 0xffffffffffffffffn;
// Offsets inside a meta page.
const META = {
  magic: PAGE_HEADER,
  version: PAGE_HEADER + 4,
  dbs: PAGE_HEADER + 24,
};
const DB_SIZE = 48;
const DB_ROOT = 40;
const LAST_PAGE = META.dbs + 2 * DB_SIZE;
const TXNID = LAST_PAGE + 8;

export interface MetaPage {
  pageSize: number;
  lastPage: bigint;
  txnid: bigint;
  roots: bigint[];
}

/**
 * Why the file is damaged, or null when it passes. Throws only for I/O errors (ENOENT, EACCES).
 *
 * Another process (a worker of `svc serve --workers`, the CLI) may be committing while this reads:
 * the file's length is taken after the meta pages (a file only grows, and a commit's pages are
 * written before its meta page), and a finding is kept only if the meta pages are the same once it
 * is made; a file whose meta pages moved meanwhile is read again (a damaged file does not change),
 * and one whose meta pages keep moving is one that another process is writing, not a damaged one.
 */
export function damageOf(file: string): string | null {
  const fd = openSync(file, 'r');
  try {
    for (let attempt = 0; attempt < RECHECKS; attempt++) {
      const before = readAt(fd, 0, 2 * MAX_PAGE);
      const damage = damageIn(fd, before);
      if (damage === null || readAt(fd, 0, 2 * MAX_PAGE).equals(before)) return damage;
    }
    // Its meta pages moved under every reading: another process is committing to it, through LMDB.
    return null;
  } finally {
    closeSync(fd);
  }
}

const RECHECKS = 5;
const MAX_PAGE = 65536;

/** The checks, given the file's first two pages (or what the file holds of them), read first. */
function damageIn(fd: number, head: Buffer): string | null {
  const size = fstatSync(fd).size;
  if (size === 0 || head.length === 0)
    return 'the file is empty (if a first start failed here before writing anything, remove it)';
  if (head.length < PAGE_HEADER + LAST_PAGE) return `the file is ${size} bytes long, shorter than its header`;
  const a = parseMeta(head.subarray(0, 512));
  if (typeof a === 'string') return `first meta page: ${a}`;
  if (head.length < 2 * a.pageSize) return `the file is ${size} bytes long, shorter than its two meta pages`;
  const b = parseMeta(head.subarray(a.pageSize, a.pageSize + 512), 1n);
  if (typeof b === 'string') return `second meta page: ${b}`;
  if (a.pageSize !== b.pageSize) return 'the two meta pages disagree on the page size';
  const meta = a.txnid >= b.txnid ? a : b;
  const needed = (meta.lastPage + 1n) * BigInt(meta.pageSize);
  if (BigInt(size) < needed) return `the file is ${size} bytes long; its last page ends at ${needed} (truncated)`;
  for (const root of meta.roots) {
    if (root === INVALID_PAGE) continue;
    if (root < 2n || root > meta.lastPage) return `a tree's root page ${root} lies outside the file`;
    const problem = pageHeaderProblem(readAt(fd, Number(root) * meta.pageSize, PAGE_HEADER), root, meta);
    if (problem) return `root page ${root}: ${problem}`;
  }
  return null;
}

/**
 * The id of the newest transaction the file's meta pages record (LMDB writes a commit's meta page
 * last), or null when they cannot be read as LMDB's. Read with plain reads, not through the map.
 */
export function newestTxnid(fd: number): bigint | null {
  const a = parseMeta(readAt(fd, 0, 512));
  if (typeof a === 'string') return null;
  const b = parseMeta(readAt(fd, a.pageSize, 512), 1n);
  if (typeof b === 'string') return null;
  return a.txnid >= b.txnid ? a.txnid : b.txnid;
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  const read = readSync(fd, buffer, 0, length, position);
  return buffer.subarray(0, read);
}

function parseMeta(page: Buffer, pgno = 0n): MetaPage | string {
  if (page.length < LAST_PAGE + 16) return 'cut short';
  if (page.readBigUInt64LE(0) !== pgno) return 'wrong page number';
  if ((page.readUInt16LE(18) & P_META) === 0) return 'not marked as a meta page';
  if (page.readUInt32LE(META.magic) !== MAGIC) return 'no LMDB magic number';
  if (page.readUInt32LE(META.version) !== DATA_VERSION)
    return `unknown data version ${page.readUInt32LE(META.version)}`;
  const pageSize = page.readUInt32LE(META.dbs);
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return `bad page size ${pageSize}`;
  return {
    pageSize,
    lastPage: page.readBigUInt64LE(LAST_PAGE),
    txnid: page.readBigUInt64LE(TXNID),
    roots: [0, 1].map((i) => page.readBigUInt64LE(META.dbs + i * DB_SIZE + DB_ROOT)),
  };
}

function pageHeaderProblem(header: Buffer, pgno: bigint, meta: MetaPage): string | null {
  if (header.length < PAGE_HEADER) return 'cut short';
  if (header.readBigUInt64LE(0) !== pgno) return 'its header names another page';
  if (header.readBigUInt64LE(8) > meta.txnid) return 'written by a transaction after the last one';
  const flags = header.readUInt16LE(18);
  if ((flags & (P_BRANCH | P_LEAF)) === 0) return 'neither a branch nor a leaf';
  const lower = header.readUInt16LE(20);
  const upper = header.readUInt16LE(22);
  if (lower > upper || upper > meta.pageSize) return 'bounds outside the page';
  return null;
}
