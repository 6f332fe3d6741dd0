import test from 'ava';
import { createServer } from 'node:net';
import { startServer, stopAndClean, svc } from '../helpers/process.js';

/** svc health: the health check of the binary's Docker image, which has no shell and no curl. */

test('svc health: exit 0 against a running server, by --url or by the address the settings bind', async (t) => {
  const server = await startServer();
  t.teardown(() => stopAndClean(server));
  const byUrl = await svc(['health', '--url', server.url, '--json']);
  t.is(byUrl.code, 0, byUrl.stderr);
  t.deepEqual(JSON.parse(byUrl.stdout), { url: `${server.url}/healthz`, answer: { status: 'ok' } });

  const port = new URL(server.url).port;
  const bySettings = await svc(['health'], { env: { SVC_HOST: '0.0.0.0', SVC_PORT: port } });
  t.is(bySettings.code, 0, bySettings.stderr);
  t.is(bySettings.stdout.trim(), `ok: http://127.0.0.1:${port}/healthz`);

  const ready = await svc(['health', '--ready', '--url', server.url, '--json']);
  t.is(ready.code, 0, ready.stderr);
  t.is((JSON.parse(ready.stdout) as { url: string }).url, `${server.url}/readyz`);
});

test('svc health: exit 3 when nothing answers, naming the address', async (t) => {
  // A port that was free a moment ago: nothing listens there.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const { code, stdout } = await svc(['health', '--url', `http://127.0.0.1:${port}`, '--json']);
  t.is(code, 3);
  const { error } = JSON.parse(stdout) as { error: { type: string; message: string; exitCode: number } };
  t.is(error.type, 'unreachable');
  t.is(error.exitCode, 3);
  t.true(error.message.includes(`http://127.0.0.1:${port}`));
});
