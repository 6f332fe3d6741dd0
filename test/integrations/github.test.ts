import test from 'ava';
import { createHmac, randomUUID } from 'node:crypto';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { makeBot, SERVER_ENV, type Bot } from '../approvals/support.js';
import { expectStatus, otherWorkspace, ownerConsole, type Person } from '../helpers/console.js';
import { assertError, bearer, call, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { poll } from '../helpers/wait.js';

/**
 * The code host (GitHub, issue 8): deliveries signed with X-Hub-Signature-256 over the raw bytes
 * (signed here by GitHub's published scheme, with node:crypto), recorded in the ledger as the
 * sender's agent, deployment protection rules decided by the gate, and every forged, altered,
 * unsigned or replayed delivery changing nothing.
 */
let server: ServedInProcess;
let owner: Person;
let deployer: Bot;
let secret: string;
let wid: string;

const DEPLOY_PROD = { actions: ['deploy'], domains: ['production.app.acme.github.com'] };
/** GitHub's own signer (@octokit/webhooks-methods): `sha256=<hex HMAC-SHA256 of the body>`. */
const sign = (key: string, body: string): Promise<string> => octokitSign(key, body);
const repository = { full_name: 'acme/app', html_url: 'https://github.com/acme/app' };

async function deliver(body: string, headers: Record<string, string>): Promise<Reply> {
  return call(server.url, 'POST', `/v1/hooks/github/${wid}`, {
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}
const headersFor = async (event: string, body: string, key = secret, delivery: string = randomUUID()) => ({
  'x-github-event': event,
  'x-github-delivery': delivery,
  'x-hub-signature-256': await sign(key, body),
});
const signed = async (event: string, payload: unknown, delivery?: string) => {
  const body = JSON.stringify(payload);
  return deliver(body, await headersFor(event, body, secret, delivery));
};
let runs = 0;
/** A protection request as GitHub sends one: each for its own run (so each body differs). */
const protection = (login: string, environment = 'production', callbackBase = 'https://api.github.com') => {
  runs += 1;
  return {
    action: 'requested',
    environment,
    event: 'push',
    deployment_callback_url: `${callbackBase}/repos/acme/app/actions/runs/${runs}/deployment_protection_rule`,
    deployment: { id: 42 + runs, sha: 'a'.repeat(40), ref: 'main', environment },
    repository,
    sender: { login },
  };
};

/** What a refused delivery must leave as it was: the ledger and the mappings. */
async function snapshot(): Promise<string> {
  const ledger = await owner.ledger();
  const bots = await owner.get('/github/bots');
  return JSON.stringify({ ledger: ledger.length, bots: bots.body.data });
}

test.before(async () => {
  server = await serveInProcess({
    env: {
      ...SERVER_ENV,
      SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1',
      SVC_WEBHOOKS_DISPATCH_INTERVAL_MS: '50',
      SVC_WEBHOOKS_BACKOFF_BASE_MS: '50',
    },
  });
  owner = await ownerConsole(server);
  wid = server.boot.workspaceId!;
  deployer = await makeBot(owner, 'deploy-bot', [DEPLOY_PROD]);
  secret = expectStatus(await owner.send('PUT', '/integrations/github', {}), 200, 'configure').body.secret;
});

test.after.always(async () => {
  await stopAndClean(server);
});

test.serial('bot accounts are mapped to agents by owners and admins, and listed', async (t) => {
  const mapped = expectStatus(
    await owner.send('PUT', '/github/bots/Deploy-Bot[bot]', { agentId: deployer.agentId }),
    200,
    'map',
  );
  t.like(mapped.body, { login: 'Deploy-Bot[bot]', agentId: deployer.agentId });
  expectStatus(await owner.send('PUT', '/github/bots/idle-bot', { agentId: null }), 200, 'unmapped');
  const listed = await owner.get('/github/bots');
  t.deepEqual(
    listed.body.data.map((b: { login: string; agentId: string | null }) => [b.login, b.agentId]),
    [
      ['Deploy-Bot[bot]', deployer.agentId],
      ['idle-bot', null],
    ],
  );
  assertError(t, await owner.send('PUT', '/github/bots/deploy-bot', { agentId: 'agt_nope' }), 404, 'not_found');
  assertError(t, await owner.send('PUT', '/github/bots/not%20a%20login', { agentId: null }), 400, 'invalid_request');
  const { addPerson } = await import('../approvals/support.js');
  const member = await addPerson(server, wid, 'member@github.example', 'member');
  assertError(t, await member.send('PUT', '/github/bots/x-bot', { agentId: null }), 403, 'forbidden');
  assertError(t, await member.get('/github/bots'), 403, 'forbidden');
  assertError(t, await owner.send('PUT', '/integrations/github', {}), 400, 'invalid_request');
});

test.serial('ping is answered and changes nothing; other events are answered and ignored', async (t) => {
  const before = await snapshot();
  const ping = await signed('ping', { zen: 'Keep it logically awesome.', hook_id: 1 });
  t.is(ping.status, 200, ping.text);
  t.deepEqual(ping.body, { received: true, event: 'ping', recorded: false });
  const star = await signed('star', { action: 'created', sender: { login: 'someone' } });
  t.deepEqual(star.body, { received: true, event: 'star', recorded: false });
  t.is(await snapshot(), before);
});

test.serial(
  "push, pull_request, deployment and deployment_status are recorded, linked to the sender's agent",
  async (t) => {
    const sha = 'b'.repeat(40);
    const push = await signed('push', {
      ref: 'refs/heads/main',
      before: 'c'.repeat(40),
      after: sha,
      commits: [{}, {}],
      repository,
      sender: { login: 'deploy-bot[BOT]' },
    });
    t.deepEqual(push.body, { received: true, event: 'push', recorded: true, agentId: deployer.agentId });
    await signed('pull_request', {
      action: 'opened',
      number: 7,
      pull_request: { number: 7, head: { sha, ref: 'feature' }, base: { ref: 'main' }, merged: false },
      repository,
      sender: { login: 'deploy-bot[bot]' },
    });
    await signed('deployment', {
      action: 'created',
      deployment: { id: 9, sha, ref: 'main', environment: 'production' },
      repository,
      sender: { login: 'deploy-bot[bot]' },
    });
    await signed('deployment_status', {
      action: 'created',
      deployment_status: { state: 'success', environment: 'production' },
      deployment: { id: 9, sha },
      repository,
      sender: { login: 'deploy-bot[bot]' },
    });
    const human = await signed('push', {
      ref: 'refs/heads/main',
      after: sha,
      repository,
      sender: { login: 'a-person' },
    });
    t.deepEqual(human.body, { received: true, event: 'push', recorded: true, agentId: null });

    const ledger = await owner.ledger();
    const byKind = (kind: string) => ledger.filter((r) => r.kind === kind);
    t.like(byKind('github.push')[0]!.data, {
      agentId: deployer.agentId,
      repository: 'acme/app',
      ref: 'refs/heads/main',
      headSha: sha,
      commits: 2,
      sender: 'deploy-bot[BOT]',
    });
    t.like(byKind('github.push')[1]!.data, { agentId: null, sender: 'a-person' });
    t.like(byKind('github.pull_request')[0]!.data, {
      agentId: deployer.agentId,
      number: 7,
      action: 'opened',
      headSha: sha,
      headRef: 'feature',
      baseRef: 'main',
    });
    t.like(byKind('github.deployment')[0]!.data, {
      agentId: deployer.agentId,
      environment: 'production',
      deploymentId: 9,
      headSha: sha,
    });
    t.like(byKind('github.deployment_status')[0]!.data, {
      agentId: deployer.agentId,
      state: 'success',
      environment: 'production',
    });
    t.is(byKind('github.push')[0]!.actor, 'github');
  },
);

test.serial("a deployment protection request is decided by the gate as the sender's agent", async (t) => {
  const allowed = await signed('deployment_protection_rule', protection('deploy-bot[bot]'));
  t.is(allowed.status, 200, allowed.text);
  t.like(allowed.body, { state: 'approved', decision: 'allow', agentId: deployer.agentId });
  const action = await call(server.url, 'GET', `/v1/actions/${allowed.body.actionId}`, {
    headers: bearer(deployer.key),
  });
  t.like(action.body, { type: 'deploy', decision: 'allow', target: { domain: 'production.app.acme.github.com' } });

  const staging = await signed('deployment_protection_rule', protection('deploy-bot[bot]', 'staging'));
  t.like(staging.body, { state: 'rejected', decision: 'deny' });
  const denied = await call(server.url, 'GET', `/v1/actions/${staging.body.actionId}`, {
    headers: bearer(deployer.key),
  });
  t.true(denied.body.signals.includes('domain_not_allowed'), denied.text);

  const unmapped = await signed('deployment_protection_rule', protection('idle-bot'));
  t.deepEqual(unmapped.body, {
    state: 'rejected',
    decision: null,
    actionId: null,
    agentId: null,
    reason: 'GitHub account idle-bot is not mapped to an agent.',
  });
  t.true((await owner.ledger()).some((r) => r.kind === 'github.deployment_rejected' && r.data.sender === 'idle-bot'));
});

test.serial("a stopped agent's deployment is rejected", async (t) => {
  expectStatus(await owner.send('POST', `/agents/${deployer.agentId}/stop`, { reason: 'deploy test' }), 200, 'stop');
  try {
    const res = await signed('deployment_protection_rule', protection('deploy-bot[bot]'));
    t.like(res.body, { state: 'rejected', decision: 'deny' });
    const action = await call(server.url, 'GET', `/v1/actions/${res.body.actionId}`, { headers: bearer(deployer.key) });
    t.true(action.body.signals.includes('agent_frozen'), action.text);
  } finally {
    expectStatus(await owner.send('POST', `/agents/${deployer.agentId}/restart`), 200, 'restart');
  }
});

test.serial('forged, altered, unsigned and replayed deliveries change nothing', async (t) => {
  const payload = { ref: 'refs/heads/main', after: 'd'.repeat(40), repository, sender: { login: 'deploy-bot[bot]' } };
  const body = JSON.stringify(payload);
  const before = await snapshot();
  const refusedBefore = (await owner.get('/integrations')).body.data.find(
    (v: { kind: string }) => v.kind === 'github',
  ).refused;
  assertError(t, await deliver(body, await headersFor('push', body, 'whs_not-the-secret')), 401, 'unauthenticated');
  assertError(t, await deliver(body.replace('main', 'mail'), await headersFor('push', body)), 401, 'unauthenticated');
  const { 'x-hub-signature-256': _s, ...unsigned } = await headersFor('push', body);
  assertError(t, await deliver(body, unsigned), 401, 'unauthenticated');
  const { 'x-github-delivery': _d, ...noDelivery } = await headersFor('push', body);
  assertError(t, await deliver(body, noDelivery), 401, 'unauthenticated');
  const { 'x-github-event': _e, ...noEvent } = await headersFor('push', body);
  assertError(t, await deliver(body, noEvent), 401, 'unauthenticated');
  assertError(
    t,
    await deliver(body, {
      ...(await headersFor('push', body)),
      'x-hub-signature-256': (await sign(secret, body)).toUpperCase(),
    }),
    401,
    'unauthenticated',
  );
  // Bytes that are not UTF-8 are refused even when signed: two of them could decode alike.
  const bytes = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
  const rawSig = `sha256=${createHmac('sha256', secret).update(bytes).digest('hex')}`;
  assertError(
    t,
    await call(server.url, 'POST', `/v1/hooks/github/${wid}`, {
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': rawSig,
      },
      body: bytes,
    }),
    401,
    'unauthenticated',
  );
  t.is(await snapshot(), before, 'nothing was stored or recorded');
  const refusedAfter = (await owner.get('/integrations')).body.data.find(
    (v: { kind: string }) => v.kind === 'github',
  ).refused;
  t.is(refusedAfter - refusedBefore, 7);

  const delivery = randomUUID();
  const first = await deliver(body, await headersFor('push', body, secret, delivery));
  t.like(first.body, { recorded: true });
  const once = await snapshot();
  t.not(once, before);
  // The same delivery again (GitHub's Redeliver, or a captured delivery replayed): the first answer, nothing more.
  const again = await deliver(body, await headersFor('push', body, secret, delivery));
  t.deepEqual(again.body, first.body);
  t.is(await snapshot(), once);
});

test.serial('a redelivered deployment protection request gets the first answer and one action', async (t) => {
  const delivery = randomUUID();
  const first = await signed('deployment_protection_rule', protection('deploy-bot[bot]'), delivery);
  const before = await snapshot();
  const again = await signed('deployment_protection_rule', protection('deploy-bot[bot]'), delivery);
  t.deepEqual(again.body, first.body);
  t.is(await snapshot(), before);
});

test.serial(
  'a signed body that is not JSON, or lacks what the event needs, is refused and changes nothing',
  async (t) => {
    const before = await snapshot();
    assertError(t, await deliver('not json', await headersFor('push', 'not json')), 400, 'invalid_json');
    const res = await signed('push', { ref: 'refs/heads/main' });
    assertError(t, res, 400, 'invalid_request');
    t.deepEqual(res.body.error.errors.map((e: { field: string }) => e.field).sort(), ['after', 'repository', 'sender']);
    t.is(await snapshot(), before);
  },
);

test.serial('rotation: the new secret verifies at once and the old one still does', async (t) => {
  const rotated = expectStatus(await owner.send('PUT', '/integrations/github', { rotate: true }), 200, 'rotate');
  const old = secret;
  secret = rotated.body.secret;
  t.is((await signed('ping', {})).status, 200);
  const body = '{}';
  t.is((await deliver(body, await headersFor('ping', body, old))).status, 200);
});

test.serial("whatever GitHub's signature header holds, the answer is 401, never a failure of the server", async (t) => {
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 200 }), async (header) => {
        const res = await deliver('{}', {
          'x-github-event': 'push',
          'x-github-delivery': randomUUID(),
          'x-hub-signature-256': header.replace(/[\r\n]/g, ''),
        });
        return res.status === 401 && res.body?.error?.type === 'unauthenticated';
      }),
      { numRuns: 60 },
    ),
  );
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 32, maxLength: 32 }), async (bytes) => {
        const hex = Buffer.from(bytes).toString('hex');
        const res = await deliver('{}', {
          'x-github-event': 'push',
          'x-github-delivery': randomUUID(),
          'x-hub-signature-256': `sha256=${hex}`,
        });
        return res.status === 401 && res.body?.error?.type === 'unauthenticated';
      }),
      { numRuns: 30 },
    ),
  );
});

test.serial('the same signed body under a new delivery id gets the first answer and changes nothing', async (t) => {
  const push = JSON.stringify({
    ref: 'refs/heads/main',
    before: 'e'.repeat(40),
    after: 'f'.repeat(40),
    repository,
    sender: { login: 'deploy-bot[bot]' },
  });
  const first = await deliver(push, await headersFor('push', push));
  t.like(first.body, { recorded: true });
  const once = await snapshot();
  const replayed = await deliver(push, await headersFor('push', push, secret, randomUUID()));
  t.deepEqual(replayed.body, first.body);
  t.is(await snapshot(), once, 'no second ledger record');

  // A captured deployment protection request resent with a fresh GUID: the same action, no new record.
  const body = JSON.stringify(protection('deploy-bot[bot]'));
  const decided = await deliver(body, await headersFor('deployment_protection_rule', body));
  t.like(decided.body, { state: 'approved' });
  const afterDecision = await snapshot();
  const again = await deliver(body, await headersFor('deployment_protection_rule', body, secret, randomUUID()));
  t.deepEqual(again.body, decided.body);
  t.is(await snapshot(), afterDecision);
  t.is(
    (await owner.ledger()).filter(
      (r) => r.kind === 'github.deployment_protection' && r.data.actionId === decided.body.actionId,
    ).length,
    1,
  );
});

test.serial('a signed body relabelled as another event is refused and changes nothing', async (t) => {
  const before = await snapshot();
  const push = JSON.stringify({
    ref: 'refs/heads/main',
    before: '1'.repeat(40),
    after: '2'.repeat(40),
    repository,
    sender: { login: 'deploy-bot[bot]' },
  });
  const guard = JSON.stringify(protection('deploy-bot[bot]'));
  const status = JSON.stringify({
    action: 'created',
    deployment_status: { state: 'success' },
    deployment: { id: 5, sha: '3'.repeat(40), environment: 'production' },
    repository,
    sender: { login: 'deploy-bot[bot]' },
  });
  for (const [body, event] of [
    [push, 'pull_request'],
    [push, 'deployment'],
    [push, 'deployment_protection_rule'],
    [guard, 'deployment'],
    [guard, 'push'],
    [status, 'deployment'],
    [status, 'deployment_protection_rule'],
  ] as const) {
    assertError(t, await deliver(body, await headersFor(event, body)), 400, 'invalid_request');
  }
  t.is(await snapshot(), before);
});

test.serial("a second workspace's signatures are refused on this workspace's route", async (t) => {
  const other = await otherWorkspace(server);
  const otherSecret = expectStatus(await other.send('PUT', '/integrations/github', {}), 200, 'configure other').body
    .secret as string;
  const before = await snapshot();
  const body = JSON.stringify({
    ref: 'refs/heads/main',
    after: '4'.repeat(40),
    repository,
    sender: { login: 'deploy-bot[bot]' },
  });
  assertError(t, await deliver(body, await headersFor('push', body, otherSecret)), 401, 'unauthenticated');
  const guard = JSON.stringify(protection('deploy-bot[bot]'));
  assertError(
    t,
    await deliver(guard, await headersFor('deployment_protection_rule', guard, otherSecret)),
    401,
    'unauthenticated',
  );
  t.is(await snapshot(), before);
  // The other workspace's own route takes it.
  const res = await call(server.url, 'POST', `/v1/hooks/github/${other.wid}`, {
    headers: { 'content-type': 'application/json', ...(await headersFor('push', body, otherSecret)) },
    body,
  });
  t.is(res.status, 200, res.text);
});

/** A loopback stand-in for GitHub's API: answers each callback with the next of `statuses` (then 204). */
async function mockGithub(statuses: number[] = []) {
  const received: Array<{ path: string; headers: Record<string, unknown>; body: Record<string, unknown> }> = [];
  const api = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => {
      data += c;
    });
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(data || '{}') });
      res.writeHead(statuses.shift() ?? 204).end();
    });
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  return {
    received,
    url: `http://127.0.0.1:${(api.address() as AddressInfo).port}/api/v3`,
    close: () => new Promise((r) => api.close(r)),
  };
}

async function until<T>(what: () => Promise<T | undefined> | T | undefined, ms = 8000): Promise<T> {
  const v = await poll(what, (found) => found !== undefined, { timeoutMs: ms });
  if (v === undefined) throw new Error('timed out waiting');
  return v;
}

test.serial(
  "decisions are reported to GitHub's deployment_callback_url with the token, durably retried; the token is never shown",
  async (t) => {
    const api = await mockGithub([502]);
    try {
      const token = 'ghs_test-installation-token-1234567890';
      const configured = expectStatus(
        await owner.send('PUT', '/integrations/github', { apiUrl: api.url, token }),
        200,
        'configure api',
      );
      t.false(configured.text.includes(token), 'the token is not answered');
      const listed = await owner.get('/integrations');
      t.false(listed.text.includes(token), 'nor shown');
      t.deepEqual(listed.body.data.find((v: { kind: string }) => v.kind === 'github').sealedSettings, ['token']);
      t.false(JSON.stringify(await owner.ledger()).includes(token), 'nor recorded');

      const allowed = await signed('deployment_protection_rule', protection('deploy-bot[bot]', 'production', api.url));
      t.like(allowed.body, { state: 'approved' });
      const denied = await signed('deployment_protection_rule', protection('deploy-bot[bot]', 'staging', api.url));
      t.like(denied.body, { state: 'rejected' });
      const reported = await until(async () => {
        const r = (await owner.ledger()).filter((x) => x.kind === 'github.deployment_reported');
        return r.length >= 2 ? r : undefined;
      });
      t.deepEqual(reported.map((r) => r.data.state).sort(), ['approved', 'rejected']);
      t.true(
        reported.some((r) => Number(r.data.tries) === 2),
        'the 502 was retried',
      );
      const posts = api.received.filter((r) => r.path.endsWith('/deployment_protection_rule'));
      t.is(posts.length, 3);
      for (const p of posts) {
        t.is(p.headers.authorization, `Bearer ${token}`);
        t.is(p.headers.accept, 'application/vnd.github+json');
        t.true(p.path.startsWith('/api/v3/repos/acme/app/actions/runs/'));
      }
      t.like(posts.find((p) => p.body.state === 'approved')?.body, { environment_name: 'production' });
      t.like(posts.find((p) => p.body.state === 'rejected')?.body, { environment_name: 'staging' });
      t.true(String(posts.find((p) => p.body.state === 'approved')?.body.comment).includes(allowed.body.actionId));

      // A callback URL outside the configured API is never called, and the refusal is recorded.
      const count = api.received.length;
      const elsewhere = await signed(
        'deployment_protection_rule',
        protection('deploy-bot[bot]', 'production', 'https://evil.example.com'),
      );
      t.like(elsewhere.body, { state: 'approved' });
      const refused = (await owner.ledger()).filter((r) => r.kind === 'github.deployment_report_refused').at(-1);
      t.like(refused?.data, { state: 'approved' });
      t.regex(String(refused?.data.reason), /not under the configured apiUrl/);
      // One more pass of the dispatcher: nothing was queued for it to send.
      await server.app.services.githubCallbacks.dispatch();
      t.is(api.received.length, count);

      // Moving the API address drops the token: it never follows an address someone else chose.
      expectStatus(
        await owner.send('PUT', '/integrations/github', { apiUrl: 'https://evil.example.com' }),
        200,
        'move api',
      );
      t.deepEqual(
        (await owner.get('/integrations')).body.data.find((v: { kind: string }) => v.kind === 'github').sealedSettings,
        [],
      );
    } finally {
      await api.close();
    }
  },
);
