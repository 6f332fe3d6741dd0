import test from 'ava';
import { request } from 'node:http';
import { Secret, TOTP } from 'otpauth';
import { assertError, call, csrf, type Json } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';
import { clearOfMinuteEdge } from '../helpers/wait.js';

// Rate-limit windows are whole minutes of the clock: each test counts inside one.
test.beforeEach(() => clearOfMinuteEdge());

/**
 * Guessing codes is limited like guessing passwords: a sign-in with the right password and a
 * wrong code counts against the account's sign-in budget, whatever address it comes from.
 */
let server: ServedInProcess;
const person = { email: 'limited@example.com', password: 'limited password 12' };
let secret: string;

test.before(async () => {
  server = await serveInProcess({ env: { SVC_SIGNIN_RATE_PER_MINUTE: '3' } });
  const wid = server.boot.workspaceId!;
  secret = await withStore(server.dataDir, async (app) => {
    const added = await app.services.people.addMember({ workspaceId: wid, ...person, role: 'member' });
    const { secret: base32 } = await app.services.people.startTotp(added.id);
    const code = new TOTP({ secret: Secret.fromBase32(base32) }).generate();
    await app.services.people.confirmTotp(added.id, code);
    return base32;
  });
});

test.after.always(() => stopAndClean(server));

/** POST /api/session from a chosen loopback source address. */
function signInFrom(localAddress: string, body: Record<string, string>): Promise<{ status: number; body: Json }> {
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
    req.end(JSON.stringify(body));
  });
}

test("wrong codes from many addresses use up the account's sign-in budget: then 429, even with the right code", async (t) => {
  const totp = new TOTP({ secret: Secret.fromBase32(secret) });
  const valid = new Set([-1, 0, 1, 2].map((s) => totp.generate({ timestamp: Date.now() + s * 30_000 })));
  const wrong = ['000000', '111111', '222222', '333333'].find((c) => !valid.has(c))!;
  const answers = [];
  for (let i = 2; i <= 4; i += 1) answers.push(await signInFrom(`127.0.0.${i}`, { ...person, totp: wrong }));
  t.deepEqual(
    answers.map((a) => [a.status, a.body.error.type]),
    [
      [401, 'totp_required'],
      [401, 'totp_required'],
      [401, 'totp_required'],
    ],
  );

  const right = totp.generate({ timestamp: Date.now() + 30_000 });
  const limited = await call(server.url, 'POST', '/api/session', { headers: csrf, json: { ...person, totp: right } });
  assertError(t, limited, 429, 'rate_limited');
  t.true(Number(limited.headers['retry-after']) > 0);
});
