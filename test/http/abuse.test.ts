import test from 'ava';
import { request } from 'node:http';
import { rateKeyOf } from '../../src/http/client-address.js';
import { createRateLimiter } from '../../src/http/rate-limit.js';
import { memoryCounters } from '../../src/store/counters.js';
import { call, csrf, type Json } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { clearOfMinuteEdge } from '../helpers/wait.js';

// Rate-limit windows are whole minutes of the clock: each test counts inside one.
test.beforeEach(() => clearOfMinuteEdge());

/** Sign-in abuse: limits per address, per /64, per account; cookies that would lock people out. */
let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '3' } });
});

test.after.always(() => stopAndClean(server));

/** POST /api/session from a chosen loopback source address. */
function signInFrom(localAddress: string, email: string): Promise<{ status: number; body: Json }> {
  const url = new URL(`${server.url}/api/session`);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress,
        headers: { ...csrf, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => {
          text += d.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ email, password: 'a wrong password' }));
  });
}

test.serial('guessing one account from many addresses hits the per-account limit', async (t) => {
  const statuses = [];
  for (let i = 2; i <= 5; i += 1) statuses.push((await signInFrom(`127.0.0.${i}`, 'admin@localhost')).status);
  t.deepEqual(statuses, [401, 401, 401, 429]);
  const other = await signInFrom('127.0.0.6', 'someone-else@example.com');
  t.is(other.status, 401, 'another account from a fresh address is not limited');
  t.is(other.body.error.type, 'unauthenticated');
});

test('IPv6 addresses are limited per /64; IPv4 per address', (t) => {
  t.is(rateKeyOf('2001:db8:1:2:aaaa::1'), rateKeyOf('2001:db8:1:2:ffff::9'));
  t.not(rateKeyOf('2001:db8:1:2::1'), rateKeyOf('2001:db8:1:3::1'));
  t.is(rateKeyOf('::ffff:10.0.0.1'), '10.0.0.1');
  t.not(rateKeyOf('10.0.0.1'), rateKeyOf('10.0.0.2'));
});

test('the in-memory counters keep a bounded number of windows and still limit the keys they keep', async (t) => {
  const counters = memoryCounters({ maxKeys: 100 });
  const limiter = createRateLimiter({ limit: 1, scope: 'public', counters, clock: { now: () => 1000 } });
  for (let i = 0; i < 10_000; i += 1) await limiter.take(`addr-${i}`);
  t.false((await limiter.take('addr-9999')).allowed, 'a recent key is still limited');
  t.true((await limiter.take('addr-0')).allowed, 'the oldest keys were dropped, not kept forever');
});

test('a malformed cookie on the request does not break sign-in or any other route', async (t) => {
  for (const cookie of ['foo="a', 'x={"json":true}', 'sid=garbage; other="unterminated']) {
    const res = await call(server.url, 'POST', '/api/session', {
      headers: { ...csrf, cookie },
      json: { email: 'nobody@example.com', password: 'whatever it is' },
    });
    t.true(res.status === 401 || res.status === 429, `${cookie}: ${res.status}`);
    t.not(res.body.error.type, 'invalid_request', cookie);
    t.is(
      (await call(server.url, 'GET', '/api/me', { headers: { cookie } })).body.error.type,
      'unauthenticated',
      cookie,
    );
  }
});
