import test from 'ava';
import { createHash } from 'node:crypto';
import type { Server } from '@hapi/hapi';
import type { App } from '../../src/app.js';
import { tableNames } from '../../src/store/tables.js';
import { inProcessServer, type InProcess } from '../helpers/in-process.js';

/**
 * Every route that takes a body, walked from the server's route table (so a route added later is
 * walked too), called with its own credential and bodies no text can be made of (issue 15 item
 * 2): a lone surrogate in a value and in a key, a number JSON cannot carry (1e400), nesting past
 * 64 levels. Each is answered 400 invalid_request naming where the fault is (or, on the few
 * routes that read their own bytes, another 4xx or a 200 that judged nothing), never a 5xx, and
 * nothing is stored. The signed inbound routes are fuzzed with valid signatures in
 * inbound-signed.test.ts.
 */
let running: InProcess;
let app: App;
let server: Server;
let wid: string;
let aid: string;
const credentials: Record<string, Record<string, string>> = {};

test.before(async () => {
  running = await inProcessServer({ 'rateLimits.signInPerMinute': 1_000_000, 'rateLimits.publicPerMinute': 1_000_000 });
  app = running.app;
  server = running.http.server;
  const { people, agents, keys, serviceTokens } = app.services;
  const made = await people.createWorkspace({
    name: 'T',
    ownerEmail: 'text@example.com',
    ownerPassword: 'text password 1234',
  });
  wid = made.workspaceId;
  aid = (await agents.create({ workspaceId: wid, name: 'bot', actsFor: made.ownerId })).id;
  await server.initialize();
  const signedIn = await server.inject({
    method: 'POST',
    url: '/api/session',
    headers: { 'x-svc-csrf': '1' },
    payload: { email: 'text@example.com', password: 'text password 1234' },
  });
  const cookie = String([signedIn.headers['set-cookie']].flat()[0]).split(';')[0]!;
  const session = { cookie, 'x-svc-csrf': '1' };
  credentials.session = session;
  credentials['session-host'] = session;
  credentials['agent-key'] = {
    authorization: `Bearer ${(await keys.mint(wid, { scope: 'agent', agentId: aid }, 'test')).key}`,
  };
  credentials['workspace-key'] = { authorization: `Bearer ${(await keys.mint(wid, { scope: 'admin' }, 'test')).key}` };
  const token = await serviceTokens.create(wid, {
    name: 'walker',
    scopes: ['agents:read', 'agents:write', 'agents:freeze', 'approvals:read', 'evidence:read'],
    expiresInDays: 7,
  });
  credentials['service-token'] = { authorization: `Bearer ${token.token}` };
});

test.after.always(() => running?.close());

async function storeDigest(): Promise<string> {
  const hash = createHash('sha256');
  for (const name of tableNames) {
    hash.update(name).update(JSON.stringify(await app.store.tables[name].scan([])));
  }
  return hash.digest('hex');
}

const fill = (path: string) =>
  path.replace(/\{(\w+)\*?\}/g, (_m, name: string) => (name === 'wid' ? wid : name === 'aid' ? aid : `${name}_x`));

const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
/** Raw JSON texts, each valid JSON that no record can hold, and the field each must be named by. */
const BODIES: Array<{ what: string; text: string; field: string | null }> = [
  { what: 'a lone surrogate in a value', text: '{"name":"Acme \\ud800","summary":"\\udc00"}', field: 'name' },
  { what: 'a lone surrogate in a key', text: '{"\\ud800":"x"}', field: '\ud800' },
  { what: 'a number JSON cannot carry', text: '{"name":"ok","amount":1e400}', field: 'amount' },
  { what: 'nesting past 64 levels', text: deep(70), field: Array(64).fill('a').join('.') },
];

test('no route that takes a body can be made to answer a 5xx or store anything by text no record can hold', async (t) => {
  const routes = server.table().filter((r) => {
    const auth = r.settings.auth as { strategies?: string[] } | false | undefined;
    const strategies = auth ? (auth.strategies ?? []) : [];
    // The signed inbound routes read their own bytes behind a signature: fuzzed elsewhere.
    return !['get', 'head'].includes(r.method) && !strategies.some((s) => s.startsWith('signature'));
  });
  t.true(routes.length > 40, `the walk found the routes that take a body (${routes.length})`);
  for (const route of routes) {
    const auth = route.settings.auth as { strategies?: string[] } | false | undefined;
    const strategy = auth ? auth.strategies?.[0] : undefined;
    const headers = { 'content-type': 'application/json', ...(strategy ? credentials[strategy] : {}) };
    for (const body of BODIES) {
      const label = `${route.method.toUpperCase()} ${route.path} with ${body.what}`;
      const before = await storeDigest();
      const res = await server.inject({ method: route.method, url: fill(route.path), headers, payload: body.text });
      t.true(res.statusCode < 500, `${label}: ${res.statusCode} ${res.payload.slice(0, 300)}`);
      t.is(await storeDigest(), before, `${label}: nothing stored`);
      // Where hapi parses the body, the pipeline names the fault; the few routes that read their
      // own bytes (receipt verification) answer in their own terms.
      const parsed = (route.settings.payload as { parse?: unknown } | undefined)?.parse !== false;
      if (parsed && res.statusCode !== 401 && res.statusCode !== 403) t.is(res.statusCode, 400, label);
      if (parsed && res.statusCode === 400) {
        const error = JSON.parse(res.payload).error;
        if (error.type === 'invalid_request' && error.errors?.length === 1 && body.field !== null)
          t.is(error.errors[0].field, body.field, label);
      }
    }
  }
});
