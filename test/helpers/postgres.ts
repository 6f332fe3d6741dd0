import { randomBytes } from 'node:crypto';
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
