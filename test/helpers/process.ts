import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { storeUrlFor } from './postgres.js';

/** Helpers that run the real `svc` binary (built to dist/ by `npm test`) as a child process. */

export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const BIN = join(ROOT, 'bin', 'run.js');

/**
 * `svc init`'s arguments for a new store in `dataDir`: the workspace Acme, whose owner is
 * ops@acme.example with a fixed password.
 */
export function initArgs(dataDir: string): string[] {
  return [
    'init',
    '--data-dir',
    dataDir,
    '--workspace',
    'Acme',
    '--owner-email',
    'ops@acme.example',
    '--owner-password',
    'a long enough owner password',
  ];
}

/**
 * How long a test's server waits for a client's headers and for its whole request. The product's
 * 2 s and 10 s cut off slow-loris clients; in the suite the client is an ava worker whose event loop
 * other tests share, and on a loaded machine it can stall longer than 2 s between connecting and
 * writing (a CI run got 408 on a sign-in). Tests of the guard itself keep the product's values.
 */
export const PATIENT_SERVER = { headersTimeoutMs: 30_000, requestTimeoutMs: 60_000 } as const;

/** A server config with PATIENT_SERVER's timeouts under what it sets itself. */
export function patientConfig(config: unknown): Record<string, unknown> {
  const given = (config ?? {}) as Record<string, unknown> & { server?: Record<string, unknown> };
  return { ...given, server: { ...PATIENT_SERVER, ...given.server } };
}

export async function tempDir(prefix = 'svc-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** An environment without the caller's SVC_* variables, so tests never leak settings. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SVC_') && k !== 'NODE_ENV') env[k] = v;
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The arguments with `--store URL` added when the run puts data dirs on PostgreSQL
 * (postgres.ts, storeUrlFor) and they name a `--data-dir` but no store (before any `--`).
 */
async function withStoreArg(args: string[]): Promise<string[]> {
  const at = args.indexOf('--data-dir');
  const dir = at >= 0 ? args[at + 1] : undefined;
  if (dir === undefined || args.includes('--store')) return args;
  const url = await storeUrlFor(dir);
  if (url === undefined) return args;
  // Before a `--` (after it every word is an argument, a kid say), else at the end.
  const end = args.indexOf('--');
  return end < 0 ? [...args, '--store', url] : [...args.slice(0, end), '--store', url, ...args.slice(end)];
}

/** Runs `svc ARGS` to completion. */
export async function svc(
  given: string[],
  options: { env?: Record<string, string | undefined>; input?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  const args = await withStoreArg(given);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: cleanEnv(options.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc ${args.join(' ')} timed out\n${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/**
 * Runs `svc ARGS` on a pseudo-terminal (util-linux `script`), as a person at a terminal would:
 * stdout and stderr arrive together, as the terminal shows them. CI is unset so that oclif
 * draws its spinner.
 */
export function svcOnTerminal(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  const terminalEnv = cleanEnv({ ...env, TERM: 'xterm' });
  delete terminalEnv.CI;
  return new Promise((resolvePromise, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      cwd: ROOT,
      env: terminalEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc ${args.join(' ')} on a terminal timed out`));
    }, 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr: '' });
    });
    child.stdin.end();
  });
}

/** What `serve --json` prints at start: the address and, on first start, the owner. */
export interface Boot {
  listening: string;
  workspaceId?: string;
  owner?: { email: string; password: string };
}

/**
 * A server under test, spawned (startServer) or in this process (serveInProcess, in
 * in-process.ts): what the route helpers need of it.
 */
export interface Served {
  url: string;
  dataDir: string;
  boot: Boot;
  /** Stops it: finishes in-flight requests, flushes, closes the store. */
  stop(): Promise<unknown>;
}

export interface RunningServer extends Served {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `svc serve --json --port 0` on 127.0.0.1 and waits for it to log `listening`.
 * `dataDir` defaults to a new temp dir; `config`, under PATIENT_SERVER's timeouts, is written to
 * `<dataDir>-config.json` and passed with --config.
 */
export async function startServer(
  options: { dataDir?: string; env?: Record<string, string | undefined>; args?: string[]; config?: unknown } = {},
): Promise<RunningServer> {
  const dataDir = options.dataDir ?? (await tempDir());
  const args = [
    BIN,
    'serve',
    '--json',
    '--data-dir',
    dataDir,
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    ...(options.args ?? []),
  ];
  const storeUrl = (options.args ?? []).includes('--store') ? undefined : await storeUrlFor(dataDir);
  if (storeUrl !== undefined) args.push('--store', storeUrl);
  const file = join(dataDir, '..', `${dataDir.split('/').pop()}-config.json`);
  await writeFile(file, JSON.stringify(patientConfig(options.config)));
  args.push('--config', file);
  const proc = spawn(process.execPath, args, {
    cwd: ROOT,
    env: cleanEnv({ SVC_LOG_LEVEL: 'info', ...options.env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  // 'close', not 'exit': the last lines the server flushes as it stops are read before stop() resolves.
  const exited = new Promise<number | null>((r) => proc.on('close', (code) => r(code)));
  // A test process that ends early (a timeout, a crash) must not leave its servers running.
  const reap = () => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  };
  process.once('exit', reap);
  void exited.then(() => process.off('exit', reap));
  // serve --json prints one (pretty) JSON document once it listens: wait until it parses whole.
  const boot = await new Promise<Boot>((resolvePromise, reject) => {
    // A server that did not start in time is stopped: left running, it would hold the test
    // process open (its pipes) after the test failed.
    const timer = setTimeout(() => {
      reap();
      reject(new Error(`server did not start within 30 s:\n${stderr}`));
    }, 30_000);
    proc.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      try {
        const parsed = JSON.parse(stdout) as Boot;
        clearTimeout(timer);
        resolvePromise(parsed);
      } catch {
        /* not complete yet */
      }
    });
    proc.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${stderr}\n${stdout}`));
    });
  });
  return {
    url: boot.listening,
    dataDir,
    proc,
    boot,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (proc.exitCode !== null) return proc.exitCode;
      proc.kill(signal);
      return exited;
    },
  };
}

/** Stops a server (if it started) and removes its data dir. */
export async function stopAndClean(server: Served | undefined): Promise<void> {
  if (!server) return;
  await server.stop();
  await Promise.all([removeDir(server.dataDir), rm(`${server.dataDir}-config.json`, { force: true })]);
}

/** Sends SIGKILL to a process that may be gone already. */
export function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

/** Whether a process still runs (a zombie does not). */
export const running = (pid: number): boolean =>
  existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z');

/** The worker processes of `svc serve --workers N`'s primary: its children, read from /proc. */
export function workersOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}
