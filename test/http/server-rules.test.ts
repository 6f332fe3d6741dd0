import test from 'ava';
import { createApp } from '../../src/app.js';
import { AppError } from '../../src/errors/app-error.js';
import { renderError } from '../../src/errors/render.js';
import type { HttpServer } from '../../src/server.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';
import { createLogger } from '../../src/lib/log.js';
import { loadSettings } from '../../src/settings/load.js';
import { removeDir, tempDir } from '../helpers/process.js';

/** Rules of the server as a whole, on in-process servers (server.inject). */
const made: InProcess[] = [];

async function server(overrides: Record<string, unknown>): Promise<HttpServer> {
  const running = await inProcessServer(overrides);
  made.push(running);
  return running.http;
}

test.after.always(async () => {
  for (const running of made) await running.close();
});

test('a route that names no caller kind is refused, never public by omission', async (t) => {
  const http = await server({});
  http.server.route({ method: 'GET', path: '/forgotten', handler: () => ({ secret: 'data' }) });
  await http.server.initialize();
  const res = await http.server.inject('/forgotten');
  t.is(res.statusCode, 403);
  t.is(JSON.parse(res.payload).error.type, 'forbidden');
  t.false(res.payload.includes('secret'));
});

test('with a configured public address, only its exact origin may write to the console', async (t) => {
  const http = await server({ env: 'production', baseUrl: 'https://svc.example' });
  await http.server.initialize();
  const send = (origin: string) =>
    http.server.inject({
      method: 'POST',
      url: '/api/session',
      headers: { 'x-svc-csrf': '1', origin, host: 'svc.example' },
      payload: { email: 'a@b.c', password: 'whatever it is' },
    });
  for (const origin of ['http://svc.example', 'https://evil.example', 'https://svc.example.evil.example', 'null']) {
    const res = await send(origin);
    t.is(JSON.parse(res.payload).error.type, 'csrf', origin);
  }
  t.is((await send('https://svc.example')).statusCode, 401, 'the deployment origin reaches sign-in');
});

test('a development server whose public address is https marks its session cookie Secure', async (t) => {
  const http = await server({ baseUrl: 'https://dev.svc.example' });
  await http.server.initialize();
  const { app } = made[made.length - 1]!;
  await app.services.people.createWorkspace({
    name: 'W',
    ownerEmail: 'o@example.com',
    ownerPassword: 'a long owner password',
  });
  const res = await http.server.inject({
    method: 'POST',
    url: '/api/session',
    headers: { 'x-svc-csrf': '1', origin: 'https://dev.svc.example' },
    payload: { email: 'o@example.com', password: 'a long owner password' },
  });
  t.is(res.statusCode, 200);
  t.regex(String(res.headers['set-cookie']), /^sid=[^;]+;.*Secure/);
});

test('in production only `internal` hides its message; other 5xx keep what the caller needs', (t) => {
  const ctx = { baseUrl: 'https://svc.example', requestId: 'req_x', production: true };
  const upstream = renderError(
    new AppError('upstream_failure', { details: { attemptedModels: ['small', 'large'] } }),
    ctx,
  );
  t.deepEqual(upstream.error.attemptedModels, ['small', 'large']);
  t.is(upstream.error.message, 'Every eligible model failed.');
  const internal = renderError(
    new AppError('internal', { message: 'db path /var/lib/svc exploded', details: { where: 'x' } }),
    ctx,
  );
  t.is(internal.error.message, 'Internal error.');
  t.false('where' in internal.error);
});

test('two first starts racing set up one workspace', async (t) => {
  const dir = await tempDir();
  const app = await createApp(loadSettings({ env: {}, overrides: { dataDir: dir } }), { log: createLogger('silent') });
  try {
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, (_v, i) =>
        app.services.people.createWorkspace({
          name: `W${i}`,
          ownerEmail: `o${i}@example.com`,
          ownerPassword: 'a long owner password',
          firstOnly: true,
        }),
      ),
    );
    t.is(results.filter((r) => r.status === 'fulfilled').length, 1);
    t.is(await app.services.people.workspaceCount(), 1);
  } finally {
    await app.close();
    await removeDir(dir);
  }
});
