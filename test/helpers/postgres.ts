import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join, resolve as resolvePath } from 'node:path';
import pg from 'pg';
import { startCluster, type Cluster } from './pg-cluster.js';

/**
 * PostgreSQL for tests. `npm test` runs ava through test/run.ts, which starts ONE private cluster
 * for the whole run and gives its URL in SVC_TEST_PG_URL; every test file then gets its own fresh
 * database in it (CREATE DATABASE per call), so files run in parallel without seeing each other.
 * A file run by hand (`npx ava test/store/contract-postgres.test.ts`) without that variable starts
 * a cluster of its own, stopped when the worker exits.
 */

let own: Cluster | undefined;
let base: Promise<string> | undefined;

function serverUrl(): Promise<string> {
  base ??= (async () => {
    const given = process.env.SVC_TEST_PG_URL;
    if (given) return given;
    own = await startCluster();
    process.once('exit', () => own?.stop());
    return own.url;
  })();
  return base;
}

export interface TestDatabase {
  /** postgres://postgres@127.0.0.1:PORT/<fresh database> */
  url: string;
  host: string;
  port: number;
  drop(): Promise<void>;
}

export async function freshDatabase(): Promise<TestDatabase> {
  const url = await serverUrl();
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(url);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    host: u.hostname,
    port: Number(u.port),
    async drop() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * The store URL for a data dir's servers and commands when the run asks for PostgreSQL
 * (SVC_TEST_STORE=postgres: `npm test` runs the route suites a second time so): one fresh database
 * per data dir, the same for every server and command that names that dir, so a restart or a
 * `--local` command sees what the server wrote. Undefined otherwise (LMDB under the data dir).
 */
const storeUrls = new Map<string, Promise<string>>();
export function storeUrlFor(dataDir: string): Promise<string | undefined> {
  if (process.env.SVC_TEST_STORE !== 'postgres') return Promise.resolve(undefined);
  const key = resolvePath(dataDir);
  let url = storeUrls.get(key);
  if (url === undefined) {
    url = freshDatabase().then((db) => db.url);
    storeUrls.set(key, url);
  }
  return url;
}

/**
 * What a store holds, as stored, for tests that check a secret never lands there: the LMDB file's
 * bytes, or every value of the PostgreSQL table (latin1, so byte searches work on both).
 */
export async function storedBytes(dataDir: string): Promise<Buffer> {
  const url = await storeUrlFor(dataDir);
  if (url === undefined) return readFile(join(dataDir, 'svc.mdb'));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ v: string }>('SELECT v FROM svc_kv');
    return Buffer.from(rows.map((r) => r.v).join('\n'), 'latin1');
  } finally {
    await client.end();
  }
}
