import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A file system of its own, small enough for a test to fill. */
export interface SmallDisk {
  dir: string;
  /** Unmounts it and removes its folder; safe to call twice. */
  remove(): void;
}

/**
 * Mounts a tmpfs of `size` (`256k`, `8M`) on a new temp folder, for the tests of a full disk.
 * Mounting needs root, or a user namespace that allows it (the machines these tests run on are
 * root); where the machine refuses, this throws with its reason, so the test fails saying what it
 * needs instead of passing without running.
 */
export function mountSmallDisk(size: string): SmallDisk {
  const dir = mkdtempSync(join(tmpdir(), 'svc-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const why = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim();
    throw new Error(`this test needs a tmpfs of its own (run as root, or where mounts are allowed): ${why}`, {
      cause: err,
    });
  }
  let mounted = true;
  return {
    dir,
    remove() {
      if (!mounted) return;
      mounted = false;
      try {
        execFileSync('umount', [dir], { stdio: 'pipe' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** Writes zeros to `file` until its file system is full; returns the bytes written. */
export async function fillDisk(file: string): Promise<number> {
  const handle = await open(file, 'w');
  const chunk = Buffer.alloc(64 * 1024);
  let written = 0;
  try {
    for (;;) {
      try {
        const { bytesWritten } = await handle.write(chunk);
        written += bytesWritten;
        if (bytesWritten < chunk.length) break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
        throw err;
      }
    }
  } finally {
    await handle.close();
  }
  return written;
}
