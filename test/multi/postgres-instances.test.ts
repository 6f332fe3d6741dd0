import test from 'ava';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.js';
import { removeDir, startServer, tempDir, type RunningServer } from '../helpers/process.js';
import { multiSuite, SERVER_ENV, type DeployOptions } from './suite.js';

/**
 * Two `svc serve` instances on one PostgreSQL database (issue 17): the multi-instance suite
 * (suite.ts). Both share one data dir for `master.key` only; everything else is in the database.
 */

const servers: RunningServer[] = [];
const databases: TestDatabase[] = [];
const dirs: string[] = [];
test.after.always(async () => {
  for (const s of servers) await s.stop('SIGKILL');
  for (const db of databases) await db.drop().catch(() => undefined);
  for (const dir of dirs) await removeDir(dir);
});

multiSuite(test, 'postgres, two instances', async (options: DeployOptions = {}) => {
  const db = await freshDatabase();
  databases.push(db);
  const dataDir = await tempDir('svc-multi-pg-');
  dirs.push(dataDir);
  const storeArgs = ['--store', db.url];
  const a = await startServer({
    dataDir,
    args: storeArgs,
    env: { ...SERVER_ENV, ...options.env },
    config: options.config,
  });
  servers.push(a);
  const b = await startServer({
    dataDir,
    args: storeArgs,
    env: { ...SERVER_ENV, ...options.env },
    config: options.config,
  });
  servers.push(b);
  // B found the store A set up: one owner, one workspace.
  const bBoot = { ...b, boot: { ...b.boot, workspaceId: a.boot.workspaceId, owner: a.boot.owner } };
  return {
    a,
    b: bBoot,
    storeArgs: ['--data-dir', dataDir, ...storeArgs],
    killA: async () => {
      await a.stop('SIGKILL');
    },
  };
});
