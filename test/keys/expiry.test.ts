import test from 'ava';
import fc from 'fast-check';
import { AuthenticationError } from 'openai';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import { manualClock } from '../helpers/clock.js';
import { assertError, bearer, call, mcpHeaders, type Reply } from '../helpers/http.js';
import { authorize, payment } from '../helpers/gate.js';
import { startMockVendor, type MockVendor } from '../helpers/mock-vendor.js';
import { stopAndClean } from '../helpers/process.js';
import { MAX_KEY_DAYS, mintKeySchema } from '../../src/keys/index.js';
import { startGateway, user, type Gateway } from '../gateway/support.js';

/**
 * Key expiry: `expiresInDays` (a whole number from 1 to 3650) on a workspace key (POST
 * /v1/admin/keys, POST /api/w/{wid}/keys) or an agent key (POST /api/w/{wid}/agents/{aid}/keys)
 * stores `expiresAt`, shown wherever the key is shown and recorded in `key.minted`. From that
 * instant, by the server's clock (moved by the test), the key is refused on every route that takes
 * keys (the model gateway, the action gate, MCP) exactly as a revoked key is; a key minted without
 * it never expires.
 */
const DAY = 86_400_000;
const clock = manualClock(Date.parse('2026-03-01T09:00:00.000Z'));

let vendor: MockVendor;
let gw: Gateway;
let admin: string;

test.before(async () => {
  vendor = await startMockVendor();
  gw = await startGateway(vendor, {}, {}, { clock });
  admin = await gw.key({ scope: 'admin' });
});

test.after.always(async () => {
  if (gw) await stopAndClean(gw.server);
  await vendor?.close();
});

const mintAdmin = (json: Record<string, unknown>) =>
  call(gw.server.url, 'POST', '/v1/admin/keys', { headers: bearer(admin), json });
const chat = (key: string) =>
  call(gw.server.url, 'POST', '/v1/chat/completions', {
    headers: { ...bearer(key), 'x-svc-task-class': 'general' },
    json: { model: 'small', messages: user('hello') },
  });
/** The owner signed in afresh: a console session lasts 12 hours of the clock the tests move by days. */
const owner = (): Promise<Person> => ownerConsole(gw.server);
const whoami = (key: string) => call(gw.server.url, 'GET', '/v1/whoami', { headers: bearer(key) });
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const mcpInit = (key: string) =>
  call(gw.server.url, 'POST', '/mcp', { headers: mcpHeaders(key, '2025-11-25'), json: INIT });

/** What a client can tell of a refusal: status, error type, message, fix, and the challenge at /mcp. */
const refusal = (res: Reply) => ({
  status: res.status,
  type: res.body?.error?.type,
  message: res.body?.error?.message,
  fix: res.body?.error?.fix,
  challenge: res.headers['www-authenticate'],
});

async function agentWithKey(name: string, body: Record<string, unknown>) {
  const person = await owner();
  const agent = expectStatus(await person.send('POST', '/agents', { name }), 201, 'agent').body.id as string;
  const minted = expectStatus(await person.send('POST', `/agents/${agent}/keys`, body), 201, 'agent key');
  return { agent, minted: minted.body };
}

test.serial(
  'a key minted with expiresInDays stores expiresAt, shown at minting, in lists, in whoami and in the ledger',
  async (t) => {
    const person = await owner();
    const res = await mintAdmin({ scope: 'inference', name: 'ci-run', expiresInDays: 30 });
    t.is(res.status, 201, res.text);
    const minted = res.body;
    t.is(minted.createdAt, new Date(clock.now()).toISOString(), "the server's clock stamps it");
    t.is(minted.expiresAt, new Date(clock.now() + 30 * DAY).toISOString());
    t.like((await whoami(minted.key)).body, { id: minted.id, expiresAt: minted.expiresAt });
    const listed = (await call(gw.server.url, 'GET', '/v1/admin/keys?limit=200', { headers: bearer(admin) })).body
      .data as { id: string; expiresAt: string | null }[];
    t.is(listed.find((k) => k.id === minted.id)?.expiresAt, minted.expiresAt);
    const consoleListed = (await person.get('/keys?limit=200')).body.data as { id: string; expiresAt: unknown }[];
    t.is(consoleListed.find((k) => k.id === minted.id)?.expiresAt, minted.expiresAt);
    t.true(
      listed.filter((k) => k.id !== minted.id).every((k) => k.expiresAt === null),
      'a key minted without it shows expiresAt: null',
    );
    const record = (await person.ledger()).find((r) => r.kind === 'key.minted' && r.subject === minted.id);
    t.deepEqual(record?.data, { scope: 'inference', name: 'ci-run', agentId: null, expiresAt: minted.expiresAt });
    const plain = (await mintAdmin({ scope: 'inference', name: 'forever' })).body;
    const plainRecord = (await person.ledger()).find((r) => r.kind === 'key.minted' && r.subject === plain.id);
    t.deepEqual(plainRecord?.data, { scope: 'inference', name: 'forever', agentId: null }, 'no expiry, no field');
    const stored = await gw.server.app.store.tables.keys.get([gw.server.boot.workspaceId!, plain.id]);
    t.false(stored !== undefined && 'expiresAt' in stored, 'a key without expiry is stored as keys always were');

    const viaConsole = expectStatus(
      await person.send('POST', '/keys', { scope: 'inference', name: 'console-made', expiresInDays: 1 }),
      201,
      'console key',
    ).body;
    t.is(viaConsole.expiresAt, new Date(clock.now() + DAY).toISOString());
  },
);

test.serial(
  'a workspace key that expires between two requests is then refused exactly like a revoked key',
  async (t) => {
    const expiring = (await mintAdmin({ scope: 'inference', name: 'expiring', expiresInDays: 2 })).body;
    const revoked = (await mintAdmin({ scope: 'inference', name: 'revoked' })).body;
    const lasting = (await mintAdmin({ scope: 'inference', name: 'lasting' })).body;
    expectStatus(
      await call(gw.server.url, 'DELETE', `/v1/admin/keys/${revoked.id}`, { headers: bearer(admin) }),
      200,
      'revoke',
    );
    t.is((await chat(expiring.key)).status, 200, 'served before it expires');
    t.is((await call(gw.server.url, 'GET', '/v1/models', { headers: bearer(expiring.key) })).status, 200);
    clock.advance(2 * DAY - 1);
    t.is((await chat(expiring.key)).status, 200, 'still served a millisecond before expiresAt');
    clock.advance(1);
    const before = vendor.count();
    for (const ask of [
      chat,
      whoami,
      (key: string) => call(gw.server.url, 'GET', '/v1/models', { headers: bearer(key) }),
      (key: string) => call(gw.server.url, 'GET', '/v1/models/small', { headers: bearer(key) }),
      (key: string) =>
        call(gw.server.url, 'POST', '/v1/messages', {
          headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'x-svc-task-class': 'general' },
          json: { model: 'claude-eu', max_tokens: 10, messages: user('hi') },
        }),
    ]) {
      const expired = await ask(expiring.key);
      assertError(t, expired, 401, 'invalid_api_key');
      t.deepEqual(refusal(expired), refusal(await ask(revoked.key)), 'the same answer as a revoked key');
    }
    t.is(vendor.count(), before, 'nothing reached the vendor');
    const sdk = await t.throwsAsync(
      gw.openai(expiring.key).chat.completions.create({ model: 'small', messages: user('hi') }),
    );
    t.true(sdk instanceof AuthenticationError, String(sdk));
    t.is((await chat(lasting.key)).status, 200, 'a key minted without expiry is still served');
    // A write of any key empties the cache of authenticated keys: read from the store, still refused.
    await mintAdmin({ scope: 'inference', name: 'bump' });
    assertError(t, await chat(expiring.key), 401, 'invalid_api_key');
    // An expired key can still be revoked (it stays listed, with both instants).
    expectStatus(
      await call(gw.server.url, 'DELETE', `/v1/admin/keys/${expiring.id}`, { headers: bearer(admin) }),
      200,
      'revoke expired',
    );
  },
);

test.serial('an admin key that expired can mint no more keys', async (t) => {
  const shortAdmin = (await mintAdmin({ scope: 'admin', name: 'short-admin', expiresInDays: 1 })).body;
  const ok = await call(gw.server.url, 'POST', '/v1/admin/keys', {
    headers: bearer(shortAdmin.key),
    json: { scope: 'inference' },
  });
  t.is(ok.status, 201);
  clock.advance(DAY);
  assertError(
    t,
    await call(gw.server.url, 'POST', '/v1/admin/keys', {
      headers: bearer(shortAdmin.key),
      json: { scope: 'inference' },
    }),
    401,
    'invalid_api_key',
  );
});

test.serial(
  'an agent key with expiresInDays: the gate, the model gateway and MCP refuse it once past, as a revoked one',
  async (t) => {
    const person = await owner();
    const { agent, minted } = await agentWithKey('expiring-bot', { name: 'nightly', expiresInDays: 7 });
    t.is(minted.expiresAt, new Date(clock.now() + 7 * DAY).toISOString());
    t.like(minted, { agentId: agent, name: 'nightly' });
    const keys = (await person.get(`/agents/${agent}/keys`)).body.data as { id: string; expiresAt: string | null }[];
    t.is(keys.find((k) => k.id === minted.id)?.expiresAt, minted.expiresAt);
    const record = (await person.ledger()).find((r) => r.kind === 'key.minted' && r.subject === minted.id);
    t.deepEqual(record?.data, { scope: 'agent', name: 'nightly', agentId: agent, expiresAt: minted.expiresAt });

    const revoked = (await agentWithKey('revoked-bot', {})).minted;
    expectStatus(await person.send('DELETE', `/keys/${revoked.id}`), 200, 'revoke');
    const lasting = (await agentWithKey('lasting-bot', {})).minted;
    t.is(lasting.expiresAt, null);

    t.is((await authorize(gw.server, minted.key, payment(100))).status, 200, 'the gate judges it before');
    const opened = await mcpInit(minted.key);
    t.is(opened.status, 200, 'MCP opens a session before');
    const session = String(opened.headers['mcp-session-id']);
    t.regex(session, /.{20,}/, 'a session was opened');
    t.is((await chat(minted.key)).status, 200, 'the gateway serves it before');

    clock.advance(7 * DAY);
    for (const ask of [(key: string) => authorize(gw.server, key, payment(100)), mcpInit, chat]) {
      const expired = await ask(minted.key);
      assertError(t, expired, 401, 'invalid_api_key');
      t.deepEqual(refusal(expired), refusal(await ask(revoked.key)), 'the same answer as a revoked key');
      t.is((await ask(lasting.key)).status, 200, 'a key without expiry goes on');
    }
    const inSession = await call(gw.server.url, 'POST', '/mcp', {
      headers: { ...mcpHeaders(minted.key, '2025-11-25'), 'mcp-session-id': session },
      json: { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
    });
    assertError(t, inSession, 401, 'invalid_api_key');
    t.regex(
      String((await mcpInit(minted.key)).headers['www-authenticate']),
      /error="invalid_token", error_description="The key is unknown, expired or revoked"/,
    );
  },
);

const INVALID: unknown[] = [0, -1, MAX_KEY_DAYS + 1, 1.5, '30', true, {}, [7], 1e20];

test.serial(
  'invalid expiresInDays: 400 invalid_request naming the field, on every route that mints a key; nothing minted',
  async (t) => {
    const person = await owner();
    const before = (await call(gw.server.url, 'GET', '/v1/admin/keys?limit=200', { headers: bearer(admin) })).body.data
      .length as number;
    const { agent } = await agentWithKey('invalid-bot', {});
    for (const value of INVALID) {
      for (const res of [
        await mintAdmin({ scope: 'inference', expiresInDays: value }),
        await person.send('POST', '/keys', { scope: 'inference', expiresInDays: value }),
        await person.send('POST', `/agents/${agent}/keys`, { expiresInDays: value }),
      ]) {
        assertError(t, res, 400, 'invalid_request');
        const fault = (res.body.error.errors as { field: string; message: string }[]).find(
          (e) => e.field === 'expiresInDays',
        );
        t.is(fault?.message, `"expiresInDays" must be a whole number of days from 1 to ${MAX_KEY_DAYS}`, String(value));
      }
    }
    const after = (await call(gw.server.url, 'GET', '/v1/admin/keys?limit=200', { headers: bearer(admin) })).body.data
      .length as number;
    t.is(after, before + 1, "only the agent's key of the setup was minted");
    // null is no expiry, as absent.
    const none = await mintAdmin({ scope: 'inference', expiresInDays: null });
    t.is(none.status, 201);
    t.is(none.body.expiresAt, null);
  },
);

test('property: the validator takes exactly the whole numbers from 1 to 3650', (t) => {
  const verdict = (value: unknown) => mintKeySchema.validate({ scope: 'inference', expiresInDays: value });
  fc.assert(
    fc.property(fc.integer({ min: 1, max: MAX_KEY_DAYS }), (days) => {
      const { error, value } = verdict(days);
      return error === undefined && value.expiresInDays === days;
    }),
  );
  fc.assert(
    fc.property(
      fc.oneof(
        fc.integer({ max: 0 }),
        fc.integer({ min: MAX_KEY_DAYS + 1 }),
        fc.double().filter((d) => !Number.isInteger(d)),
        fc.constantFrom(Infinity, -Infinity, Number.NaN, Number.MAX_SAFE_INTEGER + 2),
        fc.string(),
        fc.integer({ min: 1, max: MAX_KEY_DAYS }).map(String),
        fc.boolean(),
        fc.array(fc.integer()),
        fc.object(),
      ),
      (value) => {
        const { error } = verdict(value);
        return error !== undefined && error.details.every((d) => d.path.join('.') === 'expiresInDays');
      },
    ),
  );
  t.pass();
});

test.serial(
  'property: through the server, any expiresInDays is a 201 with the right expiresAt or a 400 naming it, never a 5xx',
  async (t) => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.integer({ min: -10, max: MAX_KEY_DAYS + 10 }), fc.double(), fc.string(), fc.constant(null)),
        async (value) => {
          const res = await mintAdmin({ scope: 'inference', expiresInDays: value });
          const valid =
            value === null || (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_KEY_DAYS);
          if (valid) {
            return (
              res.status === 201 &&
              res.body.expiresAt ===
                (value === null
                  ? null
                  : new Date(Date.parse(res.body.createdAt) + (value as number) * DAY).toISOString())
            );
          }
          return (
            res.status === 400 && res.body.error.errors.some((e: { field: string }) => e.field === 'expiresInDays')
          );
        },
      ),
      { numRuns: 40 },
    );
    t.pass();
  },
);

test.serial('keys without expiry keep working ten years on', async (t) => {
  const forever = (await mintAdmin({ scope: 'inference', name: 'decade' })).body;
  clock.advance(MAX_KEY_DAYS * DAY + DAY);
  t.is((await chat(forever.key)).status, 200);
  t.is((await whoami(admin)).body.expiresAt, null);
});
