/**
 * A process's memory as the kernel counts it (/proc/<pid>/status), and the store file's size.
 * RSS is split as the kernel splits it: anonymous pages (the JS heap, native allocations, thread
 * stacks: what a leak grows) and file-backed pages (the binary, libraries, and the pages of the
 * LMDB file the process has mapped and touched, which grow with the store and which the kernel
 * can drop at will).
 */
import { readFileSync, statSync } from 'node:fs';

export interface ProcMemory {
  /** Bytes: VmRSS, RssAnon, RssFile (+ RssShmem), VmHWM (the peak RSS). */
  rss: number;
  anon: number;
  file: number;
  peak: number;
  /** Bytes of RSS that are pages of the store file (its mapping's Rss in /proc/<pid>/smaps), when asked. */
  store?: number;
}

/** The resident bytes of every mapping of `file` in the process (LMDB maps its data file once). */
function mappedRss(pid: number, file: string): number {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return NaN;
  }
  let inFile = false;
  let total = 0;
  for (const line of text.split('\n')) {
    // A mapping's header: "start-end perms offset dev inode [path]"; its fields follow, "Name: n kB".
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inFile = line.endsWith(` ${file}`);
    else if (inFile && line.startsWith('Rss:')) total += Number(/(\d+) kB/.exec(line)?.[1] ?? 0) * 1024;
  }
  return total;
}

export function procMemory(pid: number, storeFile?: string): ProcMemory | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  return {
    rss: kb('VmRSS'),
    anon: kb('RssAnon'),
    file: kb('RssFile') + kb('RssShmem'),
    peak: kb('VmHWM'),
    ...(storeFile ? { store: mappedRss(pid, storeFile) } : {}),
  };
}

/** Bytes the file takes: its length, and the blocks allocated to it (du). */
export function fileSize(path: string): { length: number; allocated: number } {
  try {
    const s = statSync(path);
    return { length: s.size, allocated: s.blocks * 512 };
  } catch {
    return { length: NaN, allocated: NaN };
  }
}

export const mb = (bytes: number) => (bytes / 1048576).toFixed(1);

export const median = (xs: readonly number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)]!;
};
