import test from 'ava';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { addPerson, makeBot, SERVER_ENV } from '../approvals/support.js';
import { consoleClient, expectStatus, otherWorkspace, ownerConsole, type Person } from '../helpers/console.js';
import { assertError, call, mcpStatus, type Reply } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { connect } from '../oauth/support.js';

/**
 * The identity provider (Shared Signals, issue 8): Security Event Tokens signed here with jose
 * (ES256 and RS256 keys), with the keys given inline or served from a loopback JWKS address; a
 * revoked session signs the person out and ends their OAuth connections, a disabled account
 * loses its membership, and every forged, stale, altered, replayed or unsigned token changes
 * nothing.
 */
const ISS = 'https://idp.example.com';
const AUD = 'https://svc.example.com/ssf';
const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
const ACCOUNT_DISABLED = 'https://schemas.openid.net/secevent/risc/event-type/account-disabled';

let server: ServedInProcess;
let owner: Person;
let wid: string;
let es: { privateKey: CryptoKey; jwk: JWK };
let rs: { privateKey: CryptoKey; jwk: JWK };
let jwksServer: Server;
let jwksUrl: string;
let jwksFetches = 0;
let served: { keys: JWK[] } = { keys: [] };

const now = () => Math.floor(Date.now() / 1000);

async function keyPair(alg: 'ES256' | 'RS256', kid: string) {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

interface TokenOptions {
  alg?: 'ES256' | 'RS256';
  key?: CryptoKey;
  kid?: string;
  iss?: string;
  aud?: string;
  iat?: number;
  jti?: string;
  claims?: Record<string, unknown>;
}

function token(events: Record<string, unknown>, o: TokenOptions = {}): Promise<string> {
  const alg = o.alg ?? 'ES256';
  return new SignJWT({ events, ...o.claims })
    .setProtectedHeader({ alg, kid: o.kid ?? (alg === 'ES256' ? 'es-1' : 'rs-1'), typ: 'secevent+jwt' })
    .setIssuer(o.iss ?? ISS)
    .setAudience(o.aud ?? AUD)
    .setIssuedAt(o.iat ?? now())
    .setJti(o.jti ?? randomUUID())
    .sign(o.key ?? (alg === 'ES256' ? es.privateKey : rs.privateKey));
}

const subject = (email: string) => ({ subject: { format: 'email', email }, event_timestamp: now() });
const push = (
  body: string | Buffer,
  headers: Record<string, string> = { 'content-type': 'application/secevent+jwt' },
): Promise<Reply> => call(server.url, 'POST', `/v1/hooks/ssf/${wid}`, { headers, body });

interface Member {
  person: Person;
  mcpToken: string;
}

/** A member signed in, with an agent acting for them and an MCP client they connected to it. */
async function member(email: string): Promise<Member> {
  const person = await addPerson(server, wid, email, 'member');
  await makeBot(owner, `${email.split('@')[0]}-bot`, [], person.id);
  const connected = await connect(server, person.cookie);
  return { person, mcpToken: connected.tokens.access_token };
}

const meStatus = async (p: Person) =>
  (await call(server.url, 'GET', '/api/me', { headers: { cookie: p.cookie } })).status;
const memberEmails = async () =>
  ((await owner.get('/members')).body.data as Array<{ email: string }>).map((m) => m.email).sort();

/** What a refused token must leave as it was: the ledger, the members, a session and a connection. */
async function snapshot(m: Member): Promise<string> {
  return JSON.stringify({
    ledger: (await owner.ledger()).length,
    members: await memberEmails(),
    session: await meStatus(m.person),
    mcp: await mcpStatus(server.url, m.mcpToken),
  });
}

test.before(async () => {
  es = await keyPair('ES256', 'es-1');
  rs = await keyPair('RS256', 'rs-1');
  jwksServer = createServer((req, res) => {
    jwksFetches += 1;
    if (req.url?.includes('down')) return void res.writeHead(503).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(served));
  });
  await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
  jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`;
  server = await serveInProcess({ env: { ...SERVER_ENV, SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1' }, logLevel: 'info' });
  owner = await ownerConsole(server);
  wid = server.boot.workspaceId!;
  expectStatus(
    await owner.send('PUT', '/integrations/ssf', { issuer: ISS, audience: AUD, jwks: { keys: [es.jwk, rs.jwk] } }),
    200,
    'configure',
  );
});

test.after.always(async () => {
  await stopAndClean(server);
  await new Promise((r) => jwksServer?.close(r));
});

test.serial(
  'session-revoked signs the person out and ends their OAuth connections; their membership stays',
  async (t) => {
    const alice = await member('alice@ssf.example');
    t.is(await meStatus(alice.person), 200);
    t.is(await mcpStatus(server.url, alice.mcpToken), 200);
    expectStatus(
      await alice.person.send('PUT', '/chat/users/slack/UALICE', { userId: alice.person.id }),
      200,
      'chat identity',
    );
    const res = await push(await token({ [SESSION_REVOKED]: subject('Alice@SSF.example') }));
    t.is(res.status, 202, res.text);
    t.is(res.text, '');
    t.is(await meStatus(alice.person), 401);
    t.is(await mcpStatus(server.url, alice.mcpToken), 401);
    t.true((await memberEmails()).includes('alice@ssf.example'));
    const ledger = await owner.ledger();
    t.like(ledger.find((r) => r.kind === 'ssf.session_revoked')?.data, {
      userId: alice.person.id,
      sessionsEnded: 1,
      connectionsEnded: 1,
      iss: ISS,
      event: SESSION_REVOKED,
    });
    t.like(ledger.find((r) => r.kind === 'member.access_revoked')?.data, {
      why: 'identity provider: session revoked',
      chatMappingsEnded: 1,
    });
    t.false(
      (await owner.get('/chat/users')).body.data.some((u: { chatUserId: string }) => u.chatUserId === 'UALICE'),
      'their chat identity no longer speaks for them',
    );
    t.is(ledger.find((r) => r.kind === 'member.access_revoked')?.actor, 'ssf');
  },
);

test.serial('credential-change, with the subject as sub_id and an RS256 key, does the same', async (t) => {
  const bob = await member('bob@ssf.example');
  const res = await push(
    await token(
      { [CREDENTIAL_CHANGE]: { change_type: 'update', credential_type: 'password' } },
      { alg: 'RS256', claims: { sub_id: { format: 'email', email: 'bob@ssf.example' } } },
    ),
  );
  t.is(res.status, 202, res.text);
  t.is(await meStatus(bob.person), 401);
  t.is(await mcpStatus(server.url, bob.mcpToken), 401);
  t.like((await owner.ledger()).find((r) => r.kind === 'ssf.credential_change')?.data, { userId: bob.person.id });
});

test.serial('account-disabled removes the membership too; the last owner is signed out but kept', async (t) => {
  const carol = await member('carol@ssf.example');
  const res = await push(
    await token({
      [ACCOUNT_DISABLED]: { subject: { subject_type: 'email', email: 'carol@ssf.example' }, reason: 'hijacking' },
    }),
  );
  t.is(res.status, 202, res.text);
  t.false((await memberEmails()).includes('carol@ssf.example'));
  t.is(await meStatus(carol.person), 401);
  t.is(await mcpStatus(server.url, carol.mcpToken), 401);
  const ledger = await owner.ledger();
  t.like(
    ledger.find((r) => r.kind === 'member.removed' && r.subject === carol.person.id),
    { actor: 'ssf' },
  );
  t.like(ledger.find((r) => r.kind === 'ssf.account_disabled')?.data, {
    userId: carol.person.id,
    membershipRemoved: true,
  });

  // The workspace's only owner: signed out, never removed.
  const ownerEmail = server.boot.owner!.email;
  t.is((await push(await token({ [ACCOUNT_DISABLED]: subject(ownerEmail) }))).status, 202);
  t.is(await meStatus(owner), 401);
  owner = await ownerConsole(server);
  t.true((await memberEmails()).includes(ownerEmail.toLowerCase()));
  t.like((await owner.ledger()).filter((r) => r.kind === 'ssf.account_disabled').at(-1)?.data, {
    userId: owner.id,
    membershipRemoved: false,
  });
});

test.serial('an unknown subject or event type changes nothing but is accepted and recorded as ignored', async (t) => {
  const dave = await member('dave@ssf.example');
  const before = (await owner.ledger()).length;
  t.is((await push(await token({ [SESSION_REVOKED]: subject('stranger@elsewhere.example') }))).status, 202);
  t.is(
    (
      await push(
        await token({
          'https://schemas.openid.net/secevent/caep/event-type/assurance-level-change': subject('dave@ssf.example'),
        }),
      )
    ).status,
    202,
  );
  t.is(await meStatus(dave.person), 200);
  t.is(await mcpStatus(server.url, dave.mcpToken), 200);
  const added = (await owner.ledger()).slice(before);
  t.deepEqual(
    added.map((r) => [r.kind, r.data.reason]),
    [
      ['ssf.event_ignored', 'subject is not a member of this workspace'],
      ['ssf.event_ignored', 'event type not acted on'],
    ],
  );
  t.false(JSON.stringify(added).includes('stranger@elsewhere.example'), "a non-member's email is not kept");
});

test.serial('forged, stale, altered, replayed and unsigned tokens are refused and change nothing', async (t) => {
  const erin = await member('erin@ssf.example');
  const events = { [SESSION_REVOKED]: subject('erin@ssf.example') };
  const before = await snapshot(erin);
  const stranger = await keyPair('ES256', 'es-1');
  const refusals: Array<[string, string | Buffer, Record<string, string>?]> = [
    ['wrong key (same kid)', await token(events, { key: stranger.privateKey })],
    ['unknown kid', await token(events, { key: stranger.privateKey, kid: 'es-unknown' })],
    ['wrong issuer', await token(events, { iss: 'https://evil.example.com' })],
    ['wrong audience', await token(events, { aud: 'https://other.example.com' })],
    ['stale iat', await token(events, { iat: now() - 301 - 30 })],
    ['iat in the future', await token(events, { iat: now() + 120 })],
  ];
  const good = await token(events);
  const [h, p, s] = good.split('.');
  const payload = JSON.parse(Buffer.from(p!, 'base64url').toString());
  const altered = `${h}.${Buffer.from(JSON.stringify({ ...payload, jti: `${payload.jti}x` })).toString('base64url')}.${s}`;
  refusals.push(['changed byte', altered]);
  refusals.push([
    'alg none',
    `${Buffer.from(JSON.stringify({ alg: 'none', kid: 'es-1' })).toString('base64url')}.${p}.`,
  ]);
  refusals.push([
    'HS256',
    await new SignJWT({ events })
      .setProtectedHeader({ alg: 'HS256', kid: 'es-1' })
      .setIssuer(ISS)
      .setAudience(AUD)
      .setIssuedAt()
      .setJti(randomUUID())
      .sign(new TextEncoder().encode('a-shared-secret-of-32-bytes-long!')),
  ]);
  refusals.push([
    'no jti',
    await new SignJWT({ events })
      .setProtectedHeader({ alg: 'ES256', kid: 'es-1' })
      .setIssuer(ISS)
      .setAudience(AUD)
      .setIssuedAt()
      .sign(es.privateKey),
  ]);
  refusals.push([
    'no events',
    await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'es-1' })
      .setIssuer(ISS)
      .setAudience(AUD)
      .setIssuedAt()
      .setJti(randomUUID())
      .sign(es.privateKey),
  ]);
  refusals.push(['not a token', 'hello']);
  refusals.push(['empty body', '']);
  refusals.push(['wrong content type', good, { 'content-type': 'application/json' }]);
  refusals.push(['no content type', good, {}]);
  for (const [what, body, headers] of refusals) {
    const res = await push(body, headers);
    assertError(t, res, 401, 'unauthenticated');
    t.false(
      res.text.includes(typeof body === 'string' ? body.slice(20, 60) || 'x'.repeat(99) : 'x'.repeat(99)),
      `${what}: nothing of the token is echoed`,
    );
  }
  t.is(await snapshot(erin), before, 'nothing was changed');
  t.is(erin.person.cookie.length > 0, true);
  t.false(server.logs().includes(good.split('.')[1]!), 'nothing of a token is logged');

  // The good token, once; then its replay is refused and changes nothing more.
  t.is((await push(good)).status, 202);
  const once = (await owner.ledger()).length;
  assertError(t, await push(good), 401, 'unauthenticated');
  t.is((await owner.ledger()).length, once);
});

test.serial('a replayed token is refused after a restart too', async (t) => {
  const good = await token({ [SESSION_REVOKED]: subject('nobody@ssf.example') });
  t.is((await push(good)).status, 202);
  await server.stop();
  // The owner's session is in the store: it outlives the restart.
  const { cookie, id } = owner;
  server = await serveInProcess({
    dataDir: server.dataDir,
    env: { ...SERVER_ENV, SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1' },
    logLevel: 'info',
  });
  owner = { ...consoleClient(server, wid, cookie), id };
  const before = (await owner.ledger()).length;
  assertError(t, await push(good), 401, 'unauthenticated');
  t.is((await owner.ledger()).length, before);
});

test.serial(
  'keys from a jwksUri: fetched with the first token, cached, and an unknown kid refetched at most once a minute',
  async (t) => {
    served = { keys: [rs.jwk] };
    expectStatus(
      await owner.send('PUT', '/integrations/ssf', { issuer: ISS, audience: AUD, jwksUri: jwksUrl }),
      200,
      'configure uri',
    );
    const frank = await member('frank@ssf.example');
    const res = await push(await token({ [SESSION_REVOKED]: subject('frank@ssf.example') }, { alg: 'RS256' }));
    t.is(res.status, 202, res.text);
    t.is(await meStatus(frank.person), 401);
    t.is(jwksFetches, 1);
    t.is((await push(await token({ [SESSION_REVOKED]: subject('nobody@ssf.example') }, { alg: 'RS256' }))).status, 202);
    t.is(jwksFetches, 1, 'cached');
    const rolled = await keyPair('RS256', 'rs-2');
    served = { keys: [rs.jwk, rolled.jwk] };
    assertError(
      t,
      await push(
        await token(
          { [SESSION_REVOKED]: subject('nobody@ssf.example') },
          { alg: 'RS256', key: rolled.privateKey, kid: 'rs-2' },
        ),
      ),
      401,
      'unauthenticated',
    );
    t.is(jwksFetches, 1, 'no refetch within a minute of the last');
  },
);

test.serial('only an owner sets the identity provider up: an admin is refused and nothing changes', async (t) => {
  served = { keys: [es.jwk] };
  const admin = await addPerson(server, wid, 'admin@ssf.example', 'admin');
  const adminClient = consoleClient(server, wid, admin.cookie);
  const own = await keyPair('ES256', 'admin-key');
  const before = (await owner.ledger()).length;
  assertError(
    t,
    await adminClient.send('PUT', '/integrations/ssf', { issuer: ISS, audience: AUD, jwks: { keys: [own.jwk] } }),
    403,
    'forbidden',
  );
  t.is((await owner.ledger()).length, before);
  // Other integrations stay theirs to manage.
  t.is((await adminClient.get('/integrations')).status, 200);
  expectStatus(
    await owner.send('PUT', '/integrations/ssf', { issuer: ISS, audience: AUD, jwks: { keys: [es.jwk, rs.jwk] } }),
    200,
    'owner configures',
  );
});

test.serial(
  'account-disabled for an owner who is not the last ends their access but keeps the membership',
  async (t) => {
    const email = 'second-owner@ssf.example';
    expectStatus(
      await owner.send('POST', '/members', {
        email,
        name: 'Second Owner',
        role: 'owner',
        password: 'second-owner-password-1',
      }),
      201,
      'add owner',
    );
    t.is((await push(await token({ [ACCOUNT_DISABLED]: subject(email) }))).status, 202);
    t.true((await memberEmails()).includes(email));
    const record = (await owner.ledger()).filter((r) => r.kind === 'ssf.account_disabled').at(-1);
    t.like(record?.data, { membershipRemoved: false });
    t.regex(String(record?.data.membershipKept), /never removes an owner/);
    t.false(
      (await owner.ledger()).some((r) => r.kind === 'member.removed' && r.actor === 'ssf' && r.data.role === 'owner'),
    );
  },
);

test.serial('a token without typ secevent+jwt is refused', async (t) => {
  const events = { [SESSION_REVOKED]: subject('nobody@ssf.example') };
  const before = (await owner.ledger()).length;
  const untyped = await new SignJWT({ events })
    .setProtectedHeader({ alg: 'ES256', kid: 'es-1' })
    .setIssuer(ISS)
    .setAudience(AUD)
    .setIssuedAt()
    .setJti(randomUUID())
    .sign(es.privateKey);
  const wrong = await new SignJWT({ events })
    .setProtectedHeader({ alg: 'ES256', kid: 'es-1', typ: 'JWT' })
    .setIssuer(ISS)
    .setAudience(AUD)
    .setIssuedAt()
    .setJti(randomUUID())
    .sign(es.privateKey);
  for (const body of [untyped, wrong]) {
    const res = await push(body);
    assertError(t, res, 401, 'unauthenticated');
    t.regex(res.body.error.message, /typ/);
  }
  t.is((await owner.ledger()).length, before);
  const typed = await new SignJWT({ events })
    .setProtectedHeader({ alg: 'ES256', kid: 'es-1', typ: 'application/secevent+jwt' })
    .setIssuer(ISS)
    .setAudience(AUD)
    .setIssuedAt()
    .setJti(randomUUID())
    .sign(es.privateKey);
  t.is((await push(typed)).status, 202);
});

test.serial("a second workspace's identity provider keys are refused on this workspace's route", async (t) => {
  const gina = await member('gina@ssf.example');
  const other = await otherWorkspace(server);
  const otherKey = await keyPair('ES256', 'es-1');
  expectStatus(
    await other.send('PUT', '/integrations/ssf', { issuer: ISS, audience: AUD, jwks: { keys: [otherKey.jwk] } }),
    200,
    'other configures',
  );
  const before = await snapshot(gina);
  const forged = await token({ [ACCOUNT_DISABLED]: subject('gina@ssf.example') }, { key: otherKey.privateKey });
  assertError(t, await push(forged), 401, 'unauthenticated');
  t.is(await snapshot(gina), before);
  // The same token is the other workspace's to take (gina is no member there: ignored).
  const res = await call(server.url, 'POST', `/v1/hooks/ssf/${other.wid}`, {
    headers: { 'content-type': 'application/secevent+jwt' },
    body: forged,
  });
  t.is(res.status, 202, res.text);
  t.is(await snapshot(gina), before);
});

test.serial('a key set endpoint that is down costs one fetch a minute, however many tokens arrive', async (t) => {
  expectStatus(
    await owner.send('PUT', '/integrations/ssf', { issuer: ISS, audience: AUD, jwksUri: `${jwksUrl}?down=1` }),
    200,
    'configure a failing uri',
  );
  const before = jwksFetches;
  const tokens = await Promise.all(
    [1, 2, 3, 4].map(() => token({ [SESSION_REVOKED]: subject('nobody@ssf.example') }, { alg: 'RS256' })),
  );
  const answers = await Promise.all(tokens.slice(0, 3).map((tk) => push(tk)));
  for (const res of answers) assertError(t, res, 401, 'unauthenticated');
  assertError(t, await push(tokens[3]!), 401, 'unauthenticated');
  t.is(jwksFetches - before, 1, 'concurrent tokens shared one fetch, and the failure is not retried within the minute');
});

test.serial(
  'whatever the body holds (three dot-separated parts or not), the answer is 401, never a failure of the server, and nothing changes',
  async (t) => {
    const before = (await owner.ledger()).length;
    const segment = fc.oneof(
      fc.base64String({ maxLength: 120 }).map((b) => b.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')),
      fc.string({ maxLength: 40 }),
    );
    const header = fc
      .record({
        alg: fc.constantFrom('ES256', 'RS256', 'none', 'HS256', 'PS256'),
        kid: fc.constantFrom('es-1', 'rs-1', 'nope'),
        typ: fc.constantFrom('secevent+jwt', 'JWT'),
      })
      .map((h) => Buffer.from(JSON.stringify(h)).toString('base64url'));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 300 }),
          fc.tuple(header, segment, segment).map((p) => p.join('.')),
          fc.tuple(segment, segment, segment).map((p) => p.join('.')),
        ),
        async (body) => {
          const res = await push(body);
          if (res.status !== 401 || res.body?.error?.type !== 'unauthenticated')
            throw new Error(`${res.status} for ${JSON.stringify(body)}: ${res.text}`);
        },
      ),
      { numRuns: 80 },
    );
    t.is((await owner.ledger()).length, before);
  },
);
