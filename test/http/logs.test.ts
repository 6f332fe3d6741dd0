import test from 'ava';
import { bearer, call, csrf, signIn } from '../helpers/http.js';
import { removeDir, startServer, svc } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';

test('one JSON log line per request, and no key, token, password, cookie or signature in any line', async (t) => {
  const server = await startServer();
  try {
    const minted = await svc(['keys', 'create', '--scope', 'admin', '--local', '--data-dir', server.dataDir, '--json']);
    const { key } = JSON.parse(minted.stdout) as { key: string };
    const owner = server.boot.owner!;
    const cookie = await signIn(server.url, owner.email, owner.password);
    const sealed = cookie.split('=')[1]!;
    await call(server.url, 'GET', '/v1/whoami', { headers: bearer(key) });
    await call(server.url, 'GET', '/v1/models', { headers: { 'x-api-key': key } });
    await call(server.url, 'GET', `/v1/whoami?key=${key}`, { headers: { cookie } });
    await call(server.url, 'POST', '/api/session', {
      headers: csrf,
      json: { email: owner.email, password: `${owner.password}-wrong` },
    });
    await call(server.url, 'GET', '/api/me', { headers: { cookie, 'svc-signature': 't=1,v1=deadbeef' } });
    const ims = `ims_${'x'.repeat(43)}`;
    await call(server.url, 'GET', '/v1/admin/agents', { headers: bearer(ims) });
    const marker = await call(server.url, 'GET', '/healthz');

    // Wait until the last request's line is written (logs are asynchronous).
    await poll(
      () => server.stderr(),
      (text) => text.includes(String(marker.headers['x-request-id'])),
      { timeoutMs: 5000 },
    );
    const log = server.stderr();
    for (const secret of [key, owner.password, sealed, ims, 'deadbeef', `${owner.password}-wrong`]) {
      t.false(log.includes(secret), `a secret reached the log: ${secret.slice(0, 6)}…`);
    }
    const lines = log
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const requests = lines.filter((l) => l.msg === 'request');
    t.is(requests.length, 7 + 1, 'one line per request, including the sign-in above');
    const me = requests.find((l) => l.route === '/api/me')!;
    t.like(me, { method: 'GET', status: 200 });
    t.regex(String(me.requestId), /^req_/);
    t.is(typeof me.ms, 'number');
    const denied = requests.find((l) => l.route === '/v1/admin/agents')!;
    t.is(denied.status, 401);
    t.true(requests.every((l) => !('headers' in l) && !('payload' in l) && !('query' in l)));
  } finally {
    await server.stop();
    await removeDir(server.dataDir);
  }
});

test("each request's log line names the client's address; through a trusted proxy, the one x-forwarded-for gives", async (t) => {
  const forwarded = { 'x-forwarded-for': '203.0.113.7' };
  const clients = async (env: Record<string, string>): Promise<Record<string, unknown>> => {
    const server = await startServer({ env });
    try {
      const whoami = await call(server.url, 'GET', '/v1/whoami', { headers: forwarded });
      const health = await call(server.url, 'GET', '/readyz', { headers: forwarded });
      const ids = [whoami, health].map((r) => String(r.headers['x-request-id']));
      await poll(
        () => server.stderr(),
        (text) => ids.every((id) => text.includes(id)),
        { timeoutMs: 5000 },
      );
      const lines = server
        .stderr()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.msg === 'request' && ids.includes(String(l.requestId)));
      return Object.fromEntries(lines.map((l) => [String(l.route), l.client]));
    } finally {
      await server.stop();
      await removeDir(server.dataDir);
    }
  };
  // No trusted proxy: x-forwarded-for is anyone's to write, so the socket's address is logged.
  t.deepEqual(await clients({}), { '/v1/whoami': '127.0.0.1', '/readyz': '127.0.0.1' });
  // The proxy on loopback is trusted: the address it forwarded is the client.
  t.deepEqual(await clients({ SVC_TRUSTED_PROXIES: '127.0.0.1/32' }), {
    '/v1/whoami': '203.0.113.7',
    '/readyz': '203.0.113.7',
  });
});
