import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { ProtocolError } from '@modelcontextprotocol/client';
import type { Logger } from '../lib/log.js';
import { SettingsError } from '../settings/load.js';
import type { LocalServerSettings } from '../settings/schema.js';
import type { McpServerRecord } from './records.js';
import { ChildTransport } from './stdio-child.js';

/**
 * Local MCP servers (issue 34 part 5): stdio servers the operator declares in the config file
 * (`mcp.localServers`), run by svc itself, one child process per upstream session (so one per
 * agent, and per caller session within it), reached by the proxy as it reaches a remote one.
 * Rules:
 * - At start each command is resolved (an absolute path, or the first match on svc's PATH) and,
 *   for `sandbox: "bwrap"`, bubblewrap is found (on svc's PATH, as `prlimit` is) and made to run a
 *   sandbox once; a failure stops
 *   the start with a configuration error naming the server: never a silent run without sandbox.
 * - A child gets an environment of its own: the variables its `env` names (read from svc's
 *   environment at load) over PATH (the command's folder, then /usr/local/bin:/usr/bin:/bin),
 *   HOME and TMPDIR (its working directory); nothing else of svc's environment.
 * - Its working directory is a new temporary folder, removed when it exits. Its address space
 *   is limited to `memoryMb` (RLIMIT_AS), core files are off and open files are capped at
 *   MAX_FILES, through util-linux's `prlimit` (when it is missing the start logs that the
 *   limits do not apply). At most `maxProcesses` of one server run at once.
 * - bwrap: every namespace unshared (network kept only with `network: true`), the root mounted
 *   read-only, a private /dev, /proc and /tmp, the working directory the one writable folder,
 *   a session of its own, and the sandbox dies with svc.
 * - stderr lines are logged at warn with the server's id and the pid, at most STDERR_LINES per
 *   STDERR_WINDOW_MS per process; the lines left out are counted and the count logged at the
 *   window's end (or the process's, whichever comes first).
 * - An exit svc did not ask for is a crash: the calls in flight fail naming the server, and the
 *   next start of that server waits BACKOFF_BASE_MS, doubled with each crash in a row, at most
 *   BACKOFF_MAX_MS (a start that would wait longer than the upstream deadline is refused at
 *   once, saying when it may start). An exit svc asked for ends the run of crashes.
 */
export const MAX_FILES = 1024;
export const STDERR_LINES = 50;
export const STDERR_WINDOW_MS = 10_000;
export const BACKOFF_BASE_MS = 250;
export const BACKOFF_MAX_MS = 30_000;
const SYSTEM_PATH = '/usr/local/bin:/usr/bin:/bin';

/** The first executable `name` on `path`, or undefined. */
function which(name: string, path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** The bwrap arguments of one child (before its command). */
export function bwrapArgs(workdir: string, network: boolean): string[] {
  return [
    '--unshare-all',
    ...(network ? ['--share-net'] : []),
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    '--bind',
    workdir,
    workdir,
    '--chdir',
    workdir,
    '--die-with-parent',
    '--new-session',
    '--',
  ];
}

interface Resolved extends LocalServerSettings {
  /** The command's absolute path. */
  program: string;
}

/**
 * The configuration's local (stdio) MCP servers (the rules above): which workspace has which,
 * and a transport that starts a child for one. Keeps the running children; reads no store.
 */
export interface LocalServers {
  /** The local servers a workspace has, by id. */
  of(wid: string): LocalServerSettings[];
  /** Whether `name` is a local server of the workspace's. */
  declares(wid: string, name: string): boolean;
  /** A transport that starts a new child of the local server behind `record` (the record names it, never its command). */
  transport(record: McpServerRecord): ChildTransport;
  /** Ends every child still running, at shutdown. */
  close(): Promise<void>;
}

export function createLocalServers(deps: {
  servers: readonly LocalServerSettings[];
  log: Logger;
  now: () => number;
  /** The upstream deadline: a restart that would wait longer is refused at once. */
  timeoutMs: number;
}): LocalServers {
  const { log } = deps;
  const fail = (id: string, why: string) =>
    new SettingsError(`invalid configuration:\n  mcp.localServers (${id}): ${why}`);
  const svcPath = deps.servers[0]?.searchPath ?? '';
  const tools = svcPath === '' ? SYSTEM_PATH : svcPath;
  const prlimit = deps.servers.length > 0 ? which('prlimit', tools) : undefined;
  if (deps.servers.length > 0 && !prlimit)
    log.warn('prlimit (util-linux) was not found: local MCP servers run without a memory or open-file limit');
  let bwrap: string | undefined;
  const resolved = new Map<string, Resolved>();
  for (const server of deps.servers) {
    const program = isAbsolute(server.command) ? server.command : which(server.command, server.searchPath);
    if (!program) throw fail(server.id, `the command ${server.command} is not found on PATH`);
    try {
      accessSync(program, constants.X_OK);
    } catch {
      throw fail(server.id, `the command ${program} is not an executable file`);
    }
    if (server.sandbox === 'bwrap' && !bwrap) {
      bwrap = which('bwrap', tools);
      if (!bwrap) throw fail(server.id, 'sandbox is bwrap, and bubblewrap (bwrap) is not installed');
      const probe = spawnSync(bwrap, [...bwrapArgs('/tmp', false), '/bin/sh', '-c', 'exit 0'], {
        env: { PATH: SYSTEM_PATH },
        encoding: 'utf8',
        timeout: 10_000,
      });
      if (probe.status !== 0)
        throw fail(
          server.id,
          `sandbox is bwrap, and bwrap cannot make a sandbox here (${(probe.stderr || probe.error?.message || `exit ${probe.status}`).trim()})`,
        );
    }
    resolved.set(server.id, { ...server, program });
  }

  const running = new Map<string, Set<ChildTransport>>();
  const crashes = new Map<string, { count: number; until: number }>();

  /** The argv, environment and working directory of a new child of `server`. */
  const prepare = async (server: Resolved) => {
    const workdir = await mkdtemp(join(tmpdir(), `svc-mcp-${server.id}-`));
    const limits = prlimit
      ? [prlimit, `--as=${server.memoryMb * 1024 * 1024}`, '--core=0', `--nofile=${MAX_FILES}`, '--']
      : [];
    const sandbox = server.sandbox === 'bwrap' ? [bwrap!, ...bwrapArgs(workdir, server.network)] : [];
    return {
      argv: [...limits, ...sandbox, server.program, ...server.args],
      env: {
        PATH: `${dirname(server.program)}${delimiter}${SYSTEM_PATH}`,
        HOME: workdir,
        TMPDIR: workdir,
        ...server.envValues,
      },
      cwd: workdir,
      cleanup: () => rm(workdir, { recursive: true, force: true }).catch(() => {}),
    };
  };

  /** A stderr reader of one child: each line logged, at most STDERR_LINES a window, the rest counted. */
  const stderrOf = (id: string) => {
    let windowStart = deps.now();
    let lines = 0;
    let dropped = 0;
    let pending: NodeJS.Timeout | undefined;
    const flush = (pid: number) => {
      if (pending) clearTimeout(pending);
      pending = undefined;
      if (dropped > 0) log.warn({ mcpLocalServer: id, pid, dropped }, 'local MCP server stderr lines left out');
      dropped = 0;
    };
    return {
      line(text: string, pid: number) {
        const t = deps.now();
        if (t - windowStart >= STDERR_WINDOW_MS) {
          flush(pid);
          windowStart = t;
          lines = 0;
        }
        if (lines >= STDERR_LINES) {
          dropped += 1;
          // A flood followed by silence still has its count logged, a window after its first
          // line left out (not only at the next line or the process's end).
          pending ??= setTimeout(() => flush(pid), STDERR_WINDOW_MS).unref();
        } else {
          lines += 1;
          log.warn({ mcpLocalServer: id, pid, stderr: text }, 'local MCP server stderr');
        }
      },
      flush,
    };
  };

  const refused = (message: string, data: Record<string, unknown>) =>
    new ProtocolError(-32003, message, { type: 'upstream_failure', ...data });

  return {
    /** The local servers a workspace has, by id. */
    of(wid: string): LocalServerSettings[] {
      return [...resolved.values()].filter((s) => s.workspaces === null || s.workspaces.includes(wid));
    },
    /** Whether `name` is a local server of the workspace's. */
    declares(wid: string, name: string): boolean {
      const s = resolved.get(name);
      return s !== undefined && (s.workspaces === null || s.workspaces.includes(wid));
    },
    /** A transport that starts a new child of the local server behind `record` (the record names it, never its command). */
    transport(record: McpServerRecord): ChildTransport {
      const server = resolved.get(record.name);
      if (!server) throw refused(`The local MCP server ${record.name} is not in the configuration.`, {});
      const err = stderrOf(server.id);
      const live = running.get(server.id) ?? new Set<ChildTransport>();
      running.set(server.id, live);
      const transport: ChildTransport = new ChildTransport(
        async () => {
          const crashed = crashes.get(server.id);
          const wait = crashed ? crashed.until - deps.now() : 0;
          if (wait > deps.timeoutMs)
            throw refused(
              `The local MCP server ${server.id} is restarting after ${crashed!.count} crashes in a row: it may start again in ${wait} ms.`,
              { cause: 'restarting', retryAfterMs: wait },
            );
          if (live.size >= server.maxProcesses)
            throw refused(
              `The local MCP server ${server.id} runs as many processes as it may (${server.maxProcesses}, its maxProcesses in mcp.localServers). End a session (DELETE /mcp) or wait for one to idle out.`,
              { type: 'upstream_sessions_full', cap: server.maxProcesses, setting: 'mcp.localServers[].maxProcesses' },
            );
          live.add(transport);
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          try {
            return await prepare(server);
          } catch (e) {
            live.delete(transport);
            throw e;
          }
        },
        {
          onStderr: (line, pid) => err.line(line, pid),
          onExit: ({ code, signal, requested, pid }) => {
            live.delete(transport);
            err.flush(pid);
            if (requested) {
              crashes.delete(server.id);
              return;
            }
            const count = (crashes.get(server.id)?.count ?? 0) + 1;
            const backoff = Math.min(BACKOFF_BASE_MS * 2 ** (count - 1), BACKOFF_MAX_MS);
            crashes.set(server.id, { count, until: deps.now() + backoff });
            log.warn(
              { mcpLocalServer: server.id, pid, code, signal, restartInMs: backoff },
              'local MCP server process exited',
            );
          },
        },
      );
      return transport;
    },

    /** Ends every child still running, at shutdown. */
    async close(): Promise<void> {
      await Promise.all([...running.values()].flatMap((set) => [...set].map((t) => t.close())));
    },
  };
}
