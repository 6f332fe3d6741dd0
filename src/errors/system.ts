import { getSystemErrorName } from 'node:util';
import { AppError } from './app-error.js';

/**
 * The operating system's refusals (an errno from node:fs or node:net), turned into the catalogue's
 * operator errors: a message that names the directory or the port, a fix, and the exit status of
 * docs/cli.md#command-line. Never the raw errno object, on a terminal or under `--json`.
 */
export type SystemContext =
  { kind: 'data-dir'; path: string } | { kind: 'listen'; host: string; port: number } | { kind: 'file'; path: string };

const NO_SPACE = new Set(['ENOSPC', 'EDQUOT', 'EROFS']);

/** The catalogue error for an errno error in this context, or undefined when it is not one. */
export function systemError(err: unknown, context: SystemContext): AppError | undefined {
  const code = errnoName((err as { code?: unknown } | null)?.code);
  if (code === undefined) return undefined;
  const options = { cause: err };
  if (context.kind === 'listen') {
    const where = `${context.host}:${context.port}`;
    if (code === 'EADDRINUSE')
      return new AppError('port_in_use', { ...options, message: `cannot listen on ${where}: the port is in use` });
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
      return new AppError('address_unavailable', {
        ...options,
        message: `cannot listen on ${where}: not an address of this machine`,
      });
    if (code === 'EACCES' || code === 'EPERM')
      return new AppError('permission_denied', {
        ...options,
        message: `cannot listen on ${where}: permission denied`,
        fix: 'Ports below 1024 need privileges: choose another with --port (or SVC_PORT), e.g. 8080, and put a proxy in front.',
      });
    return undefined;
  }
  const path = context.path;
  const what = context.kind === 'data-dir' ? 'the data directory' : 'the file';
  if (code === 'EACCES' || code === 'EPERM')
    return new AppError('permission_denied', { ...options, message: `permission denied on ${what} ${path}` });
  if (code === 'ENOTDIR' || code === 'EEXIST')
    return new AppError('not_a_directory', {
      ...options,
      message: `${what} ${path} is not a directory (a file stands at or above it)`,
    });
  if (NO_SPACE.has(code))
    return new AppError('disk_full', {
      ...options,
      message:
        code === 'EROFS' ? `${what} ${path} is on a read-only disk` : `no space left on the disk of ${what} ${path}`,
    });
  return undefined;
}

/** Node gives errno names (EACCES); LMDB's errors carry the number (13). */
function errnoName(code: unknown): string | undefined {
  if (typeof code === 'string') return code;
  if (typeof code !== 'number' || !Number.isInteger(code) || code <= 0 || code > 4095) return undefined;
  try {
    return getSystemErrorName(-code);
  } catch {
    return undefined;
  }
}

const FILE_PROBLEMS: Readonly<Record<string, string>> = {
  ENOENT: 'there is no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a directory, not a file',
  ENOTDIR: 'a part of its path is a file, not a directory',
  ENAMETOOLONG: 'the name is too long',
  ELOOP: 'too many symbolic links in its path',
  EIO: 'the disk answered with an input/output error',
};

/**
 * Why a file named by the operator (a flag, a setting) could not be read, in words: never a bare
 * errno name (ENOENT) or Node's "ENOENT: no such file or directory, open '…'".
 */
export function fileProblem(err: unknown): string {
  const code = errnoName((err as { code?: unknown } | null)?.code);
  if (code !== undefined && FILE_PROBLEMS[code] !== undefined) return FILE_PROBLEMS[code];
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/^E[A-Z]+: /, '').replace(/, [a-z]+ '[^']*'$/, '');
}
