import { spawn } from 'node:child_process';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import * as oauth from 'oauth4webapi';
import { useConfigDir } from '../../src/cli/config-dir.js';
import { openTokens, readContexts } from '../../src/cli/contexts.js';
import { pollForTokens, startDeviceAuthorization } from '../../src/cli/device-login.js';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { bearer, call, csrf, signIn, type Reply } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import {
  BIN,
  cleanEnv,
  removeDir,
  ROOT,
  startServer,
  stopAndClean,
  svc,
  tempDir,
  type CliResult,
  type RunningServer,
} from '../helpers/process.js';

/**
 * `svc login` (the OAuth device authorization grant, RFC 8628), the commands that use the sign-in,
 * `svc whoami` and `svc logout`, each as a spawned `svc` with HOME and XDG_CONFIG_HOME in a temp
 * dir; the person approves or denies through the console's real routes (/device) with a real
 * session cookie. Server A is a spawned `svc serve`; server B runs in this process on a clock the
 * test moves forward (for expiry), as the second server of the two-contexts test.
 */
let a: RunningServer;
let b: ServedInProcess;
let offset = 0;
let ownerA: Person;
let ownerB: Person;
let home: string;
let env: Record<string, string>;

test.before(async () => {
  home = await tempDir('svc-login-home-');
  env = { HOME: home, XDG_CONFIG_HOME: join(home, 'config') };
  a = await startServer({ config: { oauth: { devicePollIntervalSeconds: 1 } } });
  b = await serveInProcess({
    clock: { now: () => Date.now() + offset },
    config: { oauth: { devicePollIntervalSeconds: 1 } },
  });
  [ownerA, ownerB] = await Promise.all([ownerConsole(a), ownerConsole(b)]);
  useConfigDir(join(home, 'config', 'svc'));
});

test.after.always(async () => {
  await Promise.all([stopAndClean(a), stopAndClean(b)]);
  await removeDir(home);
});

/** `svc ARGS` spawned, with the user code it prints as soon as it prints it. */
function spawnLogin(args: string[]): { code: Promise<string>; done: Promise<CliResult> } {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: cleanEnv(env), stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  let found: (code: string) => void = () => {};
  const code = new Promise<string>((resolve) => (found = resolve));
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    const m = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(stderr);
    if (m) found(m[1]!);
  });
  child.stdin.end();
  const done = new Promise<CliResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc ${args.join(' ')} timed out\n${stderr}`));
    }, 60_000);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ code: status, stdout, stderr });
    });
  });
  void done.then(() => found(''));
  return { code, done };
}

/** A person's decision on the /device page, as a browser posts it (cookie, Origin, form fields). */
async function decide(
  server: { url: string },
  cookie: string,
  userCode: string,
  decision: 'approve' | 'deny',
): Promise<Reply> {
  const page = await call(server.url, 'GET', `/device?user_code=${encodeURIComponent(userCode)}`, {
    headers: { cookie },
  });
  expectStatus(page, 200, 'device page');
  const workspace = /name="workspace" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
  return call(server.url, 'POST', '/device', {
    headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ user_code: userCode, workspace, decision }).toString(),
  });
}

/** Signs in to `server` through the CLI, approved by the person with `cookie`. */
async function loginAs(server: { url: string }, cookie: string, extra: string[] = []): Promise<CliResult> {
  const run = spawnLogin(['login', '--url', server.url, ...extra, '--json']);
  const userCode = await run.code;
  expectStatus(await decide(server, cookie, userCode, 'approve'), 200, 'approve');
  return run.done;
}

const json = (r: CliResult) => JSON.parse(r.stdout) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

test.serial(
  'login: the CLI prints a code and the address, the person approves it in the console, and the sign-in is kept sealed in 0600 files',
  async (t) => {
    // Without a session, the verification address sends the person to sign in and back.
    const anonymous = await call(a.url, 'GET', '/device?user_code=BCDF-GHJK');
    t.is(anonymous.status, 302);
    t.is(anonymous.headers.location, `/login?next=${encodeURIComponent('/device?user_code=BCDF-GHJK')}`);
    const loginPage = await call(a.url, 'GET', anonymous.headers.location as string);
    t.regex(loginPage.text, /data-next="\/device\?user_code=BCDF-GHJK"/);

    const run = spawnLogin(['login', '--url', a.url, '--name', 'a', '--json']);
    const userCode = await run.code;
    t.regex(userCode, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    // The page shows the code, where it came from, and the person's workspace.
    const page = await call(a.url, 'GET', `/device?user_code=${userCode.toLowerCase()}`, {
      headers: { cookie: ownerA.cookie },
    });
    t.is(page.status, 200);
    t.regex(page.text, new RegExp(`id="user-code">${userCode}<`));
    t.regex(page.text, /id="requested-from">127\.0\.0\.1</);
    const approved = await decide(a, ownerA.cookie, userCode, 'approve');
    t.is(approved.status, 200);
    t.regex(approved.text, /id="done"/);
    const result = await run.done;
    t.is(result.code, 0, result.stderr);
    t.regex(result.stderr, new RegExp(`open ${a.url}/device and enter the code ${userCode}`));
    t.regex(result.stderr, new RegExp(`open ${a.url}/device\\?user_code=${userCode}`));
    t.like(json(result), {
      context: 'a',
      url: a.url,
      user: { id: ownerA.id, email: 'admin@localhost' },
      workspace: { id: ownerA.wid },
      role: 'owner',
    });

    const folder = join(home, 'config', 'svc');
    t.is((await stat(folder)).mode & 0o777, 0o700);
    t.is((await stat(join(folder, 'contexts.json'))).mode & 0o777, 0o600);
    t.is((await stat(join(folder, 'contexts.key'))).mode & 0o777, 0o600);
    const text = await readFile(join(folder, 'contexts.json'), 'utf8');
    t.notRegex(text, /pat_|prt_/, 'no token in clear');
    t.is(readContexts().current, 'a');
    const tokens = openTokens('a', readContexts().contexts.a!)!;
    t.regex(tokens.access, /^pat_/);
    // The server keeps the tokens only as hashes: neither is in its store file, the sign-in's id is.
    const store = await readFile(join(a.dataDir, 'svc.mdb'));
    t.is(store.indexOf(tokens.access), -1);
    t.is(store.indexOf(tokens.refresh), -1);
    t.not(store.indexOf(readContexts().contexts.a!.loginId), -1);

    // The approval and the sign-in are the person's in the ledger.
    const records = await ownerA.ledger();
    t.like(
      records.find((r) => r.kind === 'cli.login_approved'),
      { actor: `user:${ownerA.id}` },
    );
    t.like(
      records.find((r) => r.kind === 'cli.signed_in'),
      { actor: `user:${ownerA.id}` },
    );
  },
);

test.serial('later commands need no --url or --token, and the ledger names the person, not a token', async (t) => {
  const agent = expectStatus(
    await ownerA.send('POST', '/agents', { name: 'cli-login-bot', actsFor: ownerA.id }),
    201,
    'agent',
  ).body as { id: string };
  const listed = await svc(['agents', 'list', '--json'], { env });
  t.is(listed.code, 0, listed.stderr);
  t.true((json(listed).data as Array<{ id: string }>).some((x) => x.id === agent.id));
  // The workspace as a file, too (svc export), as the owner signed in.
  const exported = await svc(['export', '--json'], { env });
  t.is(exported.code, 0, exported.stderr);
  t.true(
    (json(exported).document.agents as Array<{ name: string }>).some((x) => x.name === 'cli-login-bot'),
    exported.stdout,
  );

  const stopped = await svc(['agents', 'stop', agent.id, '--reason', 'signed-in stop', '--json'], { env });
  t.is(stopped.code, 0, stopped.stderr);
  // As Stop in the console: hold `owner`, which the console's restart lifts.
  t.like(json(stopped), { id: agent.id, status: 'stopped', holds: [{ hold: 'owner', reason: 'signed-in stop' }] });
  const record = (await ownerA.ledger()).find((r) => r.kind === 'agent.stopped' && r.subject === agent.id);
  t.is(record?.actor, `user:${ownerA.id}`);

  // Scripts and CI keep service tokens: SVC_TOKEN and SVC_URL come first, and the ledger names the token.
  const minted = expectStatus(
    await ownerA.send('POST', '/service-tokens', { name: 'ci', scopes: ['agents:freeze'], expiresInDays: 1 }),
    201,
    'token',
  ).body as { token: string };
  const agent2 = expectStatus(await ownerA.send('POST', '/agents', { name: 'ci-bot', actsFor: ownerA.id }), 201, 'a')
    .body as { id: string };
  // A CI runner's config dir may hold anything, a broken contexts file included: never read.
  await mkdir(join(home, 'ci', 'svc'), { recursive: true });
  await writeFile(join(home, 'ci', 'svc', 'contexts.json'), '{ not json');
  const byToken = await svc(['agents', 'stop', agent2.id, '--reason', 'ci stop', '--json'], {
    env: { HOME: home, XDG_CONFIG_HOME: join(home, 'ci'), SVC_TOKEN: minted.token, SVC_URL: a.url },
  });
  t.is(byToken.code, 0, byToken.stderr);
  t.like(json(byToken), { holds: [{ hold: 'token' }] });
  const tokenRecord = (await ownerA.ledger()).find((r) => r.kind === 'agent.stopped' && r.subject === agent2.id);
  t.is(tokenRecord?.actor, 'token:ci');
});

test.serial('whoami shows who, which server, which context and the expiry', async (t) => {
  const who = await svc(['whoami', '--json'], { env });
  t.is(who.code, 0, who.stderr);
  const answer = json(who);
  t.like(answer, {
    url: a.url,
    context: 'a',
    current: true,
    credential: { kind: 'person', user: { id: ownerA.id, email: 'admin@localhost' }, role: 'owner' },
  });
  t.true(Date.parse(answer.credential.expiresAt) > Date.now());
  const text = await svc(['whoami'], { env });
  t.regex(text.stdout, /admin@localhost .*owner in Default/);
  t.regex(text.stdout, new RegExp(`server ${a.url}, context a \\(current\\)`));
  t.regex(text.stdout, /access token expires \d{4}-/);
});

test.serial('a member signed in can do from the CLI only what their role allows in the console', async (t) => {
  const member = expectStatus(
    await ownerA.send('POST', '/members', {
      email: 'member@acme.example',
      name: 'Member',
      role: 'member',
      password: 'a-long-password-1',
    }),
    201,
    'member',
  ).body as { id: string };
  const first = await signIn(a.url, 'member@acme.example', 'a-long-password-1');
  expectStatus(
    await call(a.url, 'PUT', '/api/me/password', {
      headers: { cookie: first, ...csrf },
      json: { currentPassword: 'a-long-password-1', newPassword: 'member-own-password-2' },
    }),
    200,
    'password',
  );
  const cookie = await signIn(a.url, 'member@acme.example', 'member-own-password-2');
  const signedIn = await loginAs(a, cookie, ['--name', 'member']);
  t.is(signedIn.code, 0, signedIn.stderr);
  t.like(json(signedIn), { context: 'member', role: 'member', user: { id: member.id } });

  // The console refuses a member "stop every agent"; so does the CLI signed in as them.
  const consoleRefusal = await call(a.url, 'POST', `/api/w/${ownerA.wid}/stop-all`, {
    headers: { cookie, ...csrf },
    json: { reason: 'x' },
  });
  t.is(consoleRefusal.status, 403);
  const cliRefusal = await svc(['stop-all', 'on', '--reason', 'x', '--json'], { env });
  t.is(cliRefusal.code, 1);
  t.like(JSON.parse(cliRefusal.stdout), { error: { type: 'forbidden' } });
  t.regex(JSON.parse(cliRefusal.stdout).error.message, /you are member/);
  const state = expectStatus(await ownerA.get('/stop-all'), 200, 'stop-all').body as { on?: boolean };
  t.falsy(state.on);
  // Back to the owner's context for what follows.
  const back = await loginAs(a, ownerA.cookie, ['--name', 'a']);
  t.is(back.code, 0, back.stderr);
});

test.serial('denial: the person denies the code, and the CLI stops with access_denied', async (t) => {
  const run = spawnLogin(['login', '--url', a.url, '--name', 'denied', '--json']);
  const userCode = await run.code;
  const denied = await decide(a, ownerA.cookie, userCode, 'deny');
  t.is(denied.status, 200);
  const result = await run.done;
  t.is(result.code, 1);
  t.like(JSON.parse(result.stdout), { error: { type: 'access_denied' } });
  t.false('denied' in readContexts().contexts);
  // The code is decided: approving it afterwards is refused on the page, and nothing changes.
  const late = await call(a.url, 'POST', '/device', {
    headers: { cookie: ownerA.cookie, origin: a.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ user_code: userCode, workspace: ownerA.wid, decision: 'approve' }).toString(),
  });
  t.is(late.status, 400);
  t.regex(late.text, /id="problem"[^>]*>[^<]*already used/);
  // From another site: refused.
  const forged = await call(a.url, 'POST', '/device', {
    headers: {
      cookie: ownerA.cookie,
      origin: 'https://evil.example',
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ user_code: userCode, workspace: ownerA.wid, decision: 'approve' }).toString(),
  });
  t.is(forged.status, 403);
  t.truthy((await ownerA.ledger()).find((r) => r.kind === 'cli.login_denied' && r.actor === `user:${ownerA.id}`));
});

test.serial('an expired code: the CLI stops with expired_token, and the page says it expired', async (t) => {
  const run = spawnLogin(['login', '--url', b.url, '--name', 'late', '--json']);
  const userCode = await run.code;
  offset += 11 * 60_000;
  const result = await run.done;
  t.is(result.code, 1, result.stderr);
  t.like(JSON.parse(result.stdout), { error: { type: 'expired_token' } });
  const page = await call(b.url, 'GET', `/device?user_code=${userCode}`, { headers: { cookie: ownerB.cookie } });
  t.is(page.status, 400);
  t.regex(page.text, /expired/);
});

test.serial(
  "two contexts: each command goes to its context's server as its person; login makes the newest current",
  async (t) => {
    const second = await loginAs(b, ownerB.cookie, ['--name', 'b']);
    t.is(second.code, 0, second.stderr);
    t.is(readContexts().current, 'b');
    const agentA = expectStatus(
      await ownerA.send('POST', '/agents', { name: 'only-on-a', actsFor: ownerA.id }),
      201,
      'a',
    ).body as { id: string };
    const onA = await svc(['agents', 'list', '--context', 'a', '--json'], { env });
    const onB = await svc(['agents', 'list', '--json'], { env });
    t.is(onA.code, 0, onA.stderr);
    t.is(onB.code, 0, onB.stderr);
    t.true((json(onA).data as Array<{ id: string }>).some((x) => x.id === agentA.id));
    t.false((json(onB).data as Array<{ id: string }>).some((x) => x.id === agentA.id));
    const whoB = json(await svc(['whoami', '--json'], { env }));
    t.like(whoB, { url: b.url, context: 'b', current: true });
    t.deepEqual((whoB.contexts as Array<{ name: string; current: boolean }>).map((c) => [c.name, c.current]).sort(), [
      ['a', false],
      ['b', true],
      ['member', false],
    ]);
    // --url to another server than the context's: the person's token is not sent there.
    const elsewhere = await svc(['agents', 'list', '--url', a.url, '--json'], { env });
    t.is(elsewhere.code, 2);
    t.like(JSON.parse(elsewhere.stdout), { error: { type: 'unauthenticated' } });
    // svc health asks a context's server when one is named.
    const health = await svc(['health', '--context', 'a', '--json'], { env });
    t.is(health.code, 0, health.stderr);
    t.is(json(health).url, `${a.url}/healthz`);
    const unknown = await svc(['agents', 'list', '--context', 'nope', '--json'], { env });
    t.is(unknown.code, 2);
    t.like(JSON.parse(unknown.stdout), { error: { type: 'unknown_context' } });
  },
);

test.serial(
  "expiry and refresh: past the access token's hour the CLI refreshes by itself, and the old tokens stop",
  async (t) => {
    const before = openTokens('b', readContexts().contexts.b!)!;
    offset += 2 * 3_600_000;
    const expired = await call(b.url, 'GET', '/v1/admin/whoami', { headers: bearer(before.access) });
    t.is(expired.status, 401);
    t.is(expired.body.error.type, 'token_expired');
    const who = await svc(['whoami', '--context', 'b', '--json'], { env });
    t.is(who.code, 0, who.stderr);
    t.like(json(who), { credential: { kind: 'person', user: { id: ownerB.id } } });
    const after = openTokens('b', readContexts().contexts.b!)!;
    t.not(after.access, before.access);
    t.not(after.refresh, before.refresh);
    t.is((await call(b.url, 'GET', '/v1/admin/whoami', { headers: bearer(after.access) })).status, 200);
    // The used refresh token, past the grace window, ends the whole sign-in (rotation).
    offset += 60_000;
    const reused = await call(b.url, 'POST', '/oauth/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: before.refresh,
        client_id: 'svc-cli',
      }).toString(),
    });
    t.is(reused.status, 400);
    t.is(reused.body.error, 'invalid_grant');
    t.is((await call(b.url, 'GET', '/v1/admin/whoami', { headers: bearer(after.access) })).status, 401);
  },
);

test.serial('logout revokes the sign-in at the server and removes it here', async (t) => {
  const tokens = openTokens('a', readContexts().contexts.a!)!;
  t.is((await call(a.url, 'GET', '/v1/admin/whoami', { headers: bearer(tokens.access) })).status, 200);
  const out = await svc(['logout', '--context', 'a', '--json'], { env });
  t.is(out.code, 0, out.stderr);
  t.like(json(out), { context: 'a', url: a.url, revoked: true });
  const refused = await call(a.url, 'GET', '/v1/admin/whoami', { headers: bearer(tokens.access) });
  t.is(refused.status, 401);
  t.is(refused.body.error.type, 'invalid_token');
  const refresh = await call(a.url, 'POST', '/oauth/token', {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh,
      client_id: 'svc-cli',
    }).toString(),
  });
  t.is(refresh.body.error, 'invalid_grant');
  t.false('a' in readContexts().contexts);
  t.truthy((await ownerA.ledger()).find((r) => r.kind === 'cli.signed_out' && r.actor === `user:${ownerA.id}`));
  const after = await svc(['agents', 'list', '--context', 'a', '--json'], { env });
  t.is(after.code, 2);
  t.like(JSON.parse(after.stdout), { error: { type: 'unknown_context' } });
});

test.serial('slow_down: polled sooner than the interval, and the CLI waits 5 s longer from then on', async (t) => {
  const device = await startDeviceAuthorization(b.url);
  t.is(device.interval, 1);
  const sleeps: number[] = [];
  const outcomes: string[] = [];
  const pair = await pollForTokens(b.url, device, {
    now: () => Date.now() + offset,
    // The server's clock does not move between the first two polls: the second is too soon.
    async sleep(ms) {
      sleeps.push(ms);
      if (sleeps.length > 2) offset += ms;
      if (sleeps.length === 4) expectStatus(await decide(b, ownerB.cookie, device.userCode, 'approve'), 200, 'ok');
    },
    onPoll: (outcome) => outcomes.push(outcome),
  });
  t.deepEqual(outcomes, ['authorization_pending', 'slow_down', 'authorization_pending', 'issued']);
  t.deepEqual(sleeps, [1000, 1000, 6000, 6000]);
  t.regex(pair.access, /^pat_/);
});

test.serial(
  'a standard client (oauth4webapi) uses the device endpoint: discovery, pending, slow_down, tokens, refresh',
  async (t) => {
    const insecure = { [oauth.allowInsecureRequests]: true } as const;
    const issuer = new URL(b.url);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
    );
    t.is(as.device_authorization_endpoint, `${b.url}/oauth/device_authorization`);
    t.true(as.grant_types_supported?.includes('urn:ietf:params:oauth:grant-type:device_code'));
    const client: oauth.Client = { client_id: 'svc-cli' };
    const auth = oauth.None();
    const started = await oauth.processDeviceAuthorizationResponse(
      as,
      client,
      await oauth.deviceAuthorizationRequest(as, client, auth, {}, insecure),
    );
    t.is(started.verification_uri, `${b.url}/device`);
    t.is(started.verification_uri_complete, `${b.url}/device?user_code=${encodeURIComponent(started.user_code)}`);
    const poll = async () =>
      oauth
        .processDeviceCodeResponse(
          as,
          client,
          await oauth.deviceCodeGrantRequest(as, client, auth, started.device_code, insecure),
        )
        .catch((err: unknown) => (err instanceof oauth.ResponseBodyError ? err.error : Promise.reject(err)));
    t.is(await poll(), 'authorization_pending');
    t.is(await poll(), 'slow_down');
    expectStatus(await decide(b, ownerB.cookie, started.user_code, 'approve'), 200, 'approve');
    offset += ((started.interval ?? 5) + 5) * 1000;
    const tokens = await poll();
    if (typeof tokens === 'string') return t.fail(tokens);
    t.regex(tokens.access_token, /^pat_/);
    t.regex(tokens.refresh_token!, /^prt_/);
    t.is(tokens.token_type.toLowerCase(), 'bearer');
    // The code is spent.
    offset += 10_000;
    t.is(await poll(), 'invalid_grant');
    const whoami = await call(b.url, 'GET', '/v1/admin/whoami', { headers: bearer(tokens.access_token) });
    t.like(whoami.body, { kind: 'person', user: { id: ownerB.id }, role: 'owner' });
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, insecure),
    );
    t.regex(refreshed.access_token, /^pat_/);
    t.is((await call(b.url, 'GET', '/v1/admin/whoami', { headers: bearer(tokens.access_token) })).status, 401);
    // RFC 7009 revocation of the new refresh token ends the sign-in.
    await oauth.revocationRequest(as, client, auth, refreshed.refresh_token!, insecure);
    t.is((await call(b.url, 'GET', '/v1/admin/whoami', { headers: bearer(refreshed.access_token) })).status, 401);
  },
);

test.serial(
  'a person whose password was reset is refused from the CLI, as in the console, until they change it',
  async (t) => {
    const signedIn = await loginAs(b, ownerB.cookie, ['--name', 'b2']);
    t.is(signedIn.code, 0, signedIn.stderr);
    const users = b.app.store.tables.users;
    const before = (await users.get(ownerB.id))!;
    await b.app.store.write(() => users.put(ownerB.id, { ...before, mustChangePassword: true }));
    try {
      const refused = await svc(['agents', 'list', '--context', 'b2', '--json'], { env });
      t.is(refused.code, 1);
      t.like(JSON.parse(refused.stdout), { error: { type: 'forbidden' } });
      t.regex(JSON.parse(refused.stdout).error.message, /Change the one-time password first/);
    } finally {
      await b.app.store.write(() => users.put(ownerB.id, before));
    }
    const again = await svc(['agents', 'list', '--context', 'b2', '--json'], { env });
    t.is(again.code, 0, again.stderr);
  },
);

test.serial(
  "a password change ends the person's command-line sign-ins, as it ends their console sessions",
  async (t) => {
    const signedIn = await loginAs(a, ownerA.cookie, ['--name', 'before-change']);
    t.is(signedIn.code, 0, signedIn.stderr);
    const before = await svc(['agents', 'list', '--context', 'before-change', '--json'], { env });
    t.is(before.code, 0, before.stderr);

    const current = `${a.boot.owner!.password}-changed`;
    const changed = await call(a.url, 'PUT', '/api/me/password', {
      headers: { ...csrf, cookie: ownerA.cookie },
      json: { currentPassword: current, newPassword: `${current}-again` },
    });
    t.is(changed.status, 200, changed.text);
    const tokens = openTokens('before-change', readContexts().contexts['before-change']!)!;
    const refused = await call(a.url, 'GET', '/v1/admin/whoami', { headers: bearer(tokens.access) });
    t.is(refused.status, 401, 'the access token is refused at once');
    const refresh = await call(a.url, 'POST', '/oauth/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh,
        client_id: 'svc-cli',
      }).toString(),
    });
    t.is(refresh.body.error, 'invalid_grant', 'and so is its refresh token');
    const after = await svc(['agents', 'list', '--context', 'before-change', '--json'], { env });
    t.not(after.code, 0, after.stdout);
  },
);
