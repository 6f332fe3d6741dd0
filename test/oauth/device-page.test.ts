import test from 'ava';
import { assertError, call } from '../helpers/http.js';
import { ownedServer } from '../helpers/tokens.js';
import { clearOfMinuteEdge } from '../helpers/wait.js';

// Rate-limit windows are whole minutes of the clock: each test counts inside one.
test.beforeEach(() => clearOfMinuteEdge());

/**
 * The /device page's decision, a form post of a signed-in person (`svc login`'s approval; the
 * whole flow: test/cli/login.test.ts): accepted only from this deployment's own pages, which,
 * without a configured `baseUrl`, are those of the host the browser reached; refused cross-site
 * with 403 csrf; and typed codes are held to the per-address public budget (429 with retry-after).
 */
const served = ownedServer(test, { env: { SVC_PUBLIC_RATE_PER_MINUTE: '4' } });

const post = (origin: string, host?: string) =>
  call(served.server.url, 'POST', '/device', {
    headers: {
      cookie: served.owner.cookie,
      origin,
      ...(host ? { host } : {}),
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ user_code: 'BCDF-GHJK', workspace: served.owner.wid, decision: 'approve' }).toString(),
  });

test.serial('from the host the browser reached, the decision is taken; from another site, 403 csrf', async (t) => {
  const port = new URL(served.server.url).port;
  // No baseUrl: the page served at localhost:<port> posts back with that origin.
  const local = await post(`http://localhost:${port}`, `localhost:${port}`);
  t.is(local.status, 400, 'an unknown code is refused on the page, after the origin was accepted');
  t.regex(local.text, /id="problem"/);
  assertError(t, await post('https://evil.example'), 403, 'csrf');
  assertError(t, await post(`http://localhost:${port}`), 403, 'csrf');
});

test.serial('typed codes are held to the per-address budget: 429 with retry-after', async (t) => {
  let last = await post(served.server.url);
  for (let i = 0; i < 5 && last.status !== 429; i += 1) last = await post(served.server.url);
  assertError(t, last, 429, 'rate_limited');
  t.regex(String(last.headers['retry-after']), /^[1-9]\d*$/);
});
