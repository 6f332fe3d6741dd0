import test from 'ava';
import { createApp, type App } from '../../src/app.js';
import { createHttpServer, type HttpServer } from '../../src/server.js';
import { createLogger } from '../../src/lib/log.js';
import { loadSettings } from '../../src/settings/load.js';
import { CURRENT_SCHEMA_VERSION } from '../../src/store/index.js';
import { removeDir, tempDir } from '../helpers/process.js';

/** What changes in production (NODE_ENV=production, an https base URL), and readiness on shutdown. */
let dir: string;
let app: App;
let http: HttpServer;

test.before(async () => {
  dir = await tempDir();
  // Load sampling off: injected requests skip the front door (which answers health before hapi's
  // load check), and hapi stops its sampler once its listener is closed, which the drain test
  // below reaches while still injecting.
  app = await createApp(
    loadSettings({
      env: {},
      overrides: {
        env: 'production',
        baseUrl: 'https://svc.example',
        dataDir: dir,
        'server.port': 0,
        'load.sampleIntervalMs': 0,
      },
    }),
    { log: createLogger('silent') },
  );
  http = await createHttpServer(app);
  await http.start();
});

test.after.always(async () => {
  await http?.stop();
  await app?.close();
  await removeDir(dir);
});

test.serial('production answers carry HSTS, and error links use the public https address', async (t) => {
  const res = await http.server.inject({ method: 'GET', url: '/v1/models' });
  t.is(res.statusCode, 401);
  t.is(res.headers['strict-transport-security'], 'max-age=31536000; includeSubDomains');
  t.is(JSON.parse(res.payload).error.docs, 'https://svc.example/docs/errors#unauthenticated');
});

test.serial('readyz answers ready, then 503 draining from the moment shutdown begins; healthz stays ok', async (t) => {
  const ready = await http.server.inject({ method: 'GET', url: '/readyz' });
  t.is(ready.statusCode, 200);
  t.deepEqual(JSON.parse(ready.payload), { status: 'ready', schemaVersion: CURRENT_SCHEMA_VERSION });
  const stopping = http.stop();
  const draining = await http.server.inject({ method: 'GET', url: '/readyz' });
  t.is(draining.statusCode, 503);
  t.deepEqual(JSON.parse(draining.payload), { status: 'draining' });
  const alive = await http.server.inject({ method: 'GET', url: '/healthz' });
  t.deepEqual(JSON.parse(alive.payload), { status: 'ok' });
  await stopping;
});
