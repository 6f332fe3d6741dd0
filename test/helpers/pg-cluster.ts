import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/**
 * A private PostgreSQL cluster for tests: Debian's postgresql 15 binaries, a temp folder, trust
 * authentication, a free loopback port and its socket in that folder. initdb refuses to run as
 * root, so as root the folder is handed to the `postgres` user and the tools run through runuser.
 * fsync is off: the tests kill svc processes, never the database, so the WAL reaching the OS is
 * all their durability checks rely on, and the shared machine is spared the flushes.
 */

export const PG_BIN = '/usr/lib/postgresql/15/bin';

export interface Cluster {
  /** The superuser URL of the `postgres` database: postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  port: number;
  dir: string;
  stop(): void;
  /** Stops the database server, keeping its data (a database that went away). */
  pause(): void;
  /** Starts it again on the same port and data (the database came back). */
  resume(): void;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function run(tool: string, args: string[], asPostgres: boolean): void {
  const [cmd, argv] = asPostgres
    ? ['runuser', ['-u', 'postgres', '--', join(PG_BIN, tool), ...args]]
    : [join(PG_BIN, tool), args];
  execFileSync(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
}

export async function startCluster(): Promise<Cluster> {
  if (!existsSync(join(PG_BIN, 'initdb'))) {
    throw new Error(`PostgreSQL 15 is not installed (${PG_BIN}/initdb): apt-get install postgresql`);
  }
  const asPostgres = userInfo().uid === 0;
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  chmodSync(dir, 0o755);
  if (asPostgres) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const port = await freePort();
  const stop = () => {
    try {
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'], asPostgres);
    } catch {
      // Not running (never started, or already stopped).
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300`;
  const start = () =>
    run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '60', 'start'], asPostgres);
  try {
    run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C'], asPostgres);
    start();
  } catch (err) {
    stop();
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(`cannot start the test PostgreSQL cluster: ${e.stderr?.toString() || e.message}`, { cause: err });
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    stop,
    pause: () => run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop'], asPostgres),
    resume: start,
  };
}
