import test from 'ava';
import { call } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';
import { within } from '../helpers/wait.js';

/**
 * POST /v1/verify is public (no credential; 120 requests a minute per address) and a receipt is at
 * most 8 KB, so the route refuses a large body cheaply: a body of ~650 KB holding 60,000 unknown
 * members would otherwise make the validator build 60,000 errors (~0.3-0.7 s of event loop per
 * request and a 5 MB answer), and ten such requests from one address would stall every other
 * request of the server for seconds.
 */

let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess();
});

test.after.always(() => stopAndClean(server));

const BODY = `{${Array.from({ length: 60_000 }, (_, i) => `"k${i}":1`).join(',')}}`;

test.serial('a body of many unknown members is refused cheaply, with a small answer', async (t) => {
  const res = await call(server.url, 'POST', '/v1/verify', {
    headers: { 'content-type': 'application/json' },
    body: BODY,
  });
  t.true(res.status === 400 || res.status === 413, res.text.slice(0, 200));
  t.true(res.text.length < 64 * 1024, `the answer is ${res.text.length} bytes for a ${BODY.length}-byte request`);
});

// Serial: the probe's wait is the server's event loop, which the test's own process shares (an
// in-process server), so nothing else of this worker runs meanwhile.
test.serial('ten such requests do not stall the server', async (t) => {
  const started = Date.now();
  // The probe goes once the server has received every request of the burst.
  const listener = server.http.server.listener;
  let received = 0;
  const arrived = new Promise<void>((resolve) => {
    const count = () => {
      received += 1;
      if (received < 10) return;
      listener.off('request', count);
      resolve();
    };
    listener.on('request', count);
  });
  const burst = Array.from({ length: 10 }, () =>
    call(server.url, 'POST', '/v1/verify', { headers: { 'content-type': 'application/json' }, body: BODY }),
  );
  await within(arrived, 'burst at the server');
  const probeStart = Date.now();
  const health = await call(server.url, 'GET', '/.well-known/jwks.json');
  const probeMs = Date.now() - probeStart;
  await Promise.all(burst);
  t.is(
    health.status,
    200,
    `an unrelated request was answered ${health.status} ${health.body?.error?.type ?? ''} after ${probeMs} ms`,
  );
  t.true(
    probeMs < 1000,
    `an unrelated request waited ${probeMs} ms behind the burst (burst total ${Date.now() - started} ms)`,
  );
});
