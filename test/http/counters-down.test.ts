import test from 'ava';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { call } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { removeDir, tempDir } from '../helpers/process.js';

/**
 * The rate limits fail closed (docs/operations.md#rate-limits-across-processes): when the store's
 * counters cannot count (here the LMDB counters file cannot be opened: a folder stands where it
 * goes), a limited route answers 503 store_unavailable with retry-after, never lets the request
 * through uncounted and never answers 500; health still answers, and once the counters can count
 * again the same requests are served.
 */

let server: ServedInProcess | undefined;
const dirs: string[] = [];
test.after.always(async () => {
  await server?.stop();
  for (const dir of dirs) await removeDir(dir);
});

test.serial(
  'counters that cannot count: the gate and a public route answer 503 store_unavailable; they recover',
  async (t) => {
    const dataDir = await tempDir('svc-counters-down-');
    dirs.push(dataDir);
    server = await serveInProcess({ dataDir });
    const bot = await createAgent(server);
    t.is((await authorize(server, bot.key, payment(10))).status, 200);
    await server.stop();
    server = undefined;

    // The counters' file (made by the sign-in and the decision above) gives way to a folder.
    const file = (await readdir(dataDir)).find((f) => /^counters-.*\.mdb$/.test(f));
    t.truthy(file);
    await rm(join(dataDir, file!), { force: true });
    await rm(join(dataDir, `${file!}-lock`), { force: true });
    await mkdir(join(dataDir, file!));

    server = await serveInProcess({ dataDir });
    const gate = await authorize(server, bot.key, payment(10));
    t.is(gate.status, 503, gate.text);
    t.is(gate.body.error.type, 'store_unavailable');
    t.truthy(gate.headers['retry-after']);
    const jwks = await call(server.url, 'GET', '/.well-known/jwks.json');
    t.is(jwks.status, 503, jwks.text);
    t.is(jwks.body.error.type, 'store_unavailable');
    t.is((await call(server.url, 'GET', '/healthz')).status, 200);
    const listed = await call(server.url, 'GET', `/api/w/${bot.wid}/ledger?limit=100`, {
      headers: { cookie: bot.cookie },
    });
    const decided = (listed.body.data as Array<{ kind: string }>).filter((r) => r.kind.startsWith('action.'));
    t.is(decided.length, 1, 'only the decision made before: the refused one was not made');

    await rm(join(dataDir, file!), { recursive: true });
    t.is((await authorize(server, bot.key, payment(10))).status, 200, 'served again once the counters can count');
    t.is((await call(server.url, 'GET', '/.well-known/jwks.json')).status, 200);
  },
);
