import test from 'ava';
import { existsSync } from 'node:fs';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { call } from '../helpers/http.js';
import { freePort, startCluster, type Cluster } from '../helpers/pg-cluster.js';
import { removeDir, startServer, svc, tempDir, type RunningServer } from '../helpers/process.js';
import { until } from '../helpers/receiver.js';

/**
 * PostgreSQL faults (issue 17): a database that cannot be reached at start, and one that goes away
 * under a running server and comes back. This file runs its own cluster, since it stops it.
 */

let cluster: Cluster | undefined;
const servers: RunningServer[] = [];
const dirs: string[] = [];
test.after.always(async () => {
  for (const s of servers) await s.stop('SIGKILL');
  cluster?.stop();
  for (const dir of dirs) await removeDir(dir);
});

test.serial('a database unreachable at start: exit 3 naming where, never the password, with a fix', async (t) => {
  const dataDir = await tempDir('svc-pg-down-');
  dirs.push(dataDir);
  const port = await freePort();
  const res = await svc([
    'serve',
    '--data-dir',
    dataDir,
    '--store',
    `postgres://svc:hunter2-s3cret@127.0.0.1:${port}/svc`,
  ]);
  t.is(res.code, 3, res.stderr);
  t.true(res.stderr.includes(`127.0.0.1:${port}`), res.stderr);
  t.regex(res.stderr, /Check that PostgreSQL runs there/);
  t.false(res.stderr.includes('hunter2-s3cret'), 'the password is never shown');
  t.false(res.stdout.includes('hunter2-s3cret'));
});

test.serial('a URL that names no store we know is refused (exit 2) without echoing it', async (t) => {
  const res = await svc(['serve', '--store', 'mysql://root:hunter2-s3cret@db/svc']);
  t.is(res.code, 2, res.stderr);
  t.false(res.stderr.includes('hunter2-s3cret'));
});

test.serial(
  'the database lost mid-run: requests (a console session too) fail closed with 503, nothing half-written, no one signed out; it recovers',
  async (t) => {
    cluster = await startCluster();
    const dataDir = await tempDir('svc-pg-lost-');
    dirs.push(dataDir);
    const server = await startServer({
      dataDir,
      args: ['--store', cluster.url],
      env: { SVC_SIGNIN_RATE_PER_MINUTE: '1000' },
    });
    servers.push(server);
    const bot = await createAgent(server);
    t.is((await authorize(server, bot.key, payment(100))).body.decision, 'allow');

    cluster.pause();
    const lost = await authorize(server, bot.key, payment(100));
    t.is(lost.status, 503, lost.text);
    t.is(lost.body.error.type, 'store_unavailable');
    t.truthy(lost.headers['retry-after']);
    const ready = await call(server.url, 'GET', '/readyz');
    t.is(ready.status, 503, ready.text);
    // A console session is a credential like the others: 503, and its cookie is not cleared.
    const session = await call(server.url, 'GET', `/api/w/${bot.wid}/agents`, { headers: { cookie: bot.cookie } });
    t.is(session.status, 503, session.text);
    t.is(session.body.error.type, 'store_unavailable');
    t.is(session.headers['set-cookie'], undefined, 'the session cookie is kept');

    cluster.resume();
    await until(
      'the server to decide again',
      async () => (await authorize(server, bot.key, payment(100))).status === 200,
    );
    const listed = await call(server.url, 'GET', `/api/w/${bot.wid}/ledger?limit=100`, {
      headers: { cookie: bot.cookie },
    });
    t.is(listed.status, 200, 'the same session cookie works again');
    const decided = (listed.body.data as Array<{ kind: string }>).filter((r) => r.kind.startsWith('action.'));
    t.true(decided.length >= 2, 'the decisions before and after the outage are recorded');
    const verify = await svc(['ledger', 'verify', '--data-dir', dataDir, '--store', cluster.url, '--json']);
    t.is(verify.code, 0, verify.stderr + verify.stdout);
    // svc backup copies LMDB files: on PostgreSQL it says to use pg_dump, exit 2, and writes nothing.
    const out = `${dataDir}-backup.mdb`;
    const backup = await svc(['backup', '--data-dir', dataDir, '--store', cluster.url, '--out', out]);
    t.is(backup.code, 2, backup.stderr);
    t.regex(backup.stderr, /pg_dump/);
    t.false(existsSync(out));
  },
);
