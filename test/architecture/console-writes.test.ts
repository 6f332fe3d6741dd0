import test from 'ava';
import type { Server } from '@hapi/hapi';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';

/**
 * Cross-site request forgery, for every console write there is and every one added later: the route table is
 * walked, and each non-GET /api/ route is called cross-site (no x-svc-csrf; then the header with
 * a foreign Origin). Every one answers 403 csrf before anything else is looked at.
 */
let running: InProcess;
let server: Server;

test.before(async () => {
  running = await inProcessServer();
  server = running.http.server;
  await server.initialize();
});

test.after.always(() => running?.close());

const fill = (path: string) =>
  path.replace(/\{(\w+)\*?\}/g, (_m, name: string) => (name === 'wid' ? 'ws_AAAAAAAAAAAAAAAAAAAAAA' : `${name}_x`));

test('every console write refuses a request without x-svc-csrf, or from another origin', async (t) => {
  const writes = server.table().filter((r) => r.path.startsWith('/api/') && !['get', 'head'].includes(r.method));
  t.true(writes.length >= 4, 'the walk found the console writes');
  for (const route of writes) {
    const url = fill(route.path);
    const method = route.method.toUpperCase();
    const bare = await server.inject({ method, url, payload: {} });
    t.is(bare.statusCode, 403, `${method} ${route.path} without x-svc-csrf`);
    t.is(JSON.parse(bare.payload).error.type, 'csrf', `${method} ${route.path}`);
    const foreign = await server.inject({
      method,
      url,
      payload: {},
      headers: { 'x-svc-csrf': '1', origin: 'https://evil.example' },
    });
    t.is(foreign.statusCode, 403, `${method} ${route.path} from another origin`);
    t.is(JSON.parse(foreign.payload).error.type, 'csrf', `${method} ${route.path}`);
  }
});
