import test from 'ava';
import Hapi from '@hapi/hapi';
import { inboundStrategy, registerInbound } from '../../src/http/auth/signature.js';
import { svcSignatureVerifier } from '../../src/http/inbound.js';
import type { IntegrationRegistry } from '../../src/integrations/registry.js';
import { pipeline } from '../../src/http/pipeline.js';
import { createLogger } from '../../src/lib/log.js';
import { signPayload } from '../../src/lib/svc-signature.js';
import type { Json } from '../helpers/http.js';

/**
 * generic `svc-signature`: `t=<unix seconds>,v1=<hex>`, HMAC-SHA256 over `<t>.<raw
 * body>`, five minutes of tolerance, several secrets during a rotation. A call that does not
 * verify is refused (401 unauthenticated) before the handler sees it.
 */

const NOW_MS = Date.UTC(2026, 9, 1, 12, 0, 0);
const NOW_S = Math.floor(NOW_MS / 1000);
const OLD_SECRET = 'old-secret';
const NEW_SECRET = 'new-secret';

const WID = 'ws_0000000000000000000000';
let server: Hapi.Server;
let handlerCalls = 0;
const seenBodies: string[] = [];

test.before(async () => {
  server = Hapi.server({ host: '127.0.0.1', port: 0 });
  await server.register({
    plugin: pipeline,
    options: { baseUrl: () => 'http://x', production: false, log: createLogger('silent'), retryAfterSeconds: 5 },
  });
  registerInbound(server, { now: () => NOW_MS }, [svcSignatureVerifier('issuer', secrets([OLD_SECRET, NEW_SECRET]))]);
  server.route({
    method: 'POST',
    path: '/hook/{wid}',
    options: {
      auth: { strategy: inboundStrategy('issuer'), payload: 'required' },
      payload: { parse: false, output: 'data' },
    },
    handler(request) {
      handlerCalls += 1;
      const body = request.payload as Buffer;
      seenBodies.push(body.toString('utf8'));
      return { length: body.length };
    },
  });
  await server.initialize();
});

test.after.always(async () => {
  await server?.stop();
});

/** A registry that holds `list` as every workspace's issuer secrets. */
function secrets(list: string[]): IntegrationRegistry {
  return { secretsFor: () => list } as unknown as IntegrationRegistry;
}

const BODY = JSON.stringify({ id: 'evt_1', type: 'charge.posted', cardId: 'card_1', amount: 1250, currency: 'EUR' });

async function post(body: string | Buffer, signature?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signature !== undefined) headers['svc-signature'] = signature;
  const res = await server.inject({ method: 'POST', url: `/hook/${WID}`, headers, payload: body });
  return { status: res.statusCode, body: JSON.parse(res.payload) as Json, headers: res.headers };
}

/** Asserts a refusal that never reached the handler. */
async function refused(t: import('ava').ExecutionContext, body: string | Buffer, signature?: string) {
  const before = handlerCalls;
  const res = await post(body, signature);
  t.is(res.status, 401, JSON.stringify(res.body));
  t.is(res.body.error.type, 'unauthenticated');
  t.is(typeof res.body.error.message, 'string');
  t.true(String(res.body.error.fix).length > 0);
  t.is(res.body.error.requestId, res.headers['x-request-id']);
  t.is(handlerCalls, before, 'the handler was not called');
  return res;
}

// Tests that count handler calls run serially, so no other call moves the count meanwhile.

test.serial('a body signed with the new secret is accepted and reaches the handler unchanged', async (t) => {
  const before = handlerCalls;
  const res = await post(BODY, signPayload(NEW_SECRET, BODY, NOW_S));
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(res.body, { length: Buffer.byteLength(BODY) });
  t.is(handlerCalls, before + 1);
  t.is(seenBodies.at(-1), BODY);
});

test.serial('a body signed with the old secret is accepted during a rotation', async (t) => {
  const before = handlerCalls;
  const res = await post(BODY, signPayload(OLD_SECRET, BODY, NOW_S));
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(res.body, { length: Buffer.byteLength(BODY) });
  t.is(handlerCalls, before + 1);
});

test.serial('a timestamp within five minutes either way is accepted', async (t) => {
  for (const t0 of [NOW_S - 299, NOW_S + 299]) {
    const res = await post(BODY, signPayload(NEW_SECRET, BODY, t0));
    t.is(res.status, 200, String(t0));
  }
});

test.serial('a header carrying a stale v1 beside a good one is accepted', async (t) => {
  const good = signPayload(NEW_SECRET, BODY, NOW_S);
  const stale = signPayload('retired-secret', BODY, NOW_S).split(',')[1]!;
  const res = await post(BODY, `${good},${stale}`);
  t.is(res.status, 200);
});

test.serial('a body signed with a wrong secret is refused', async (t) => {
  const res = await refused(t, BODY, signPayload('wrong-secret', BODY, NOW_S));
  t.regex(res.body.error.message, /signature/i);
});

test.serial('a body with one changed byte is refused', async (t) => {
  const signature = signPayload(NEW_SECRET, BODY, NOW_S);
  const tampered = Buffer.from(BODY);
  tampered[tampered.length - 2] = tampered[tampered.length - 2]! ^ 0x01;
  await refused(t, tampered, signature);
});

test.serial('a signature whose t was changed is refused (t is part of what is signed)', async (t) => {
  const mac = signPayload(NEW_SECRET, BODY, NOW_S).split(',')[1]!;
  await refused(t, BODY, `t=${NOW_S - 1},${mac}`);
});

test.serial('a timestamp six minutes old is refused, even with a correct HMAC', async (t) => {
  const res = await refused(t, BODY, signPayload(NEW_SECRET, BODY, NOW_S - 360));
  t.regex(res.body.error.message, /five minutes|timestamp/i);
});

test.serial('a timestamp six minutes ahead is refused', async (t) => {
  await refused(t, BODY, signPayload(NEW_SECRET, BODY, NOW_S + 360));
});

test.serial('a missing svc-signature header is refused', async (t) => {
  const res = await refused(t, BODY);
  t.regex(res.body.error.message, /svc-signature/);
});

test.serial('malformed svc-signature headers are refused', async (t) => {
  const mac = signPayload(NEW_SECRET, BODY, NOW_S).split(',')[1]!.slice(3);
  for (const header of [
    'garbage',
    '',
    `v1=${mac}`,
    `t=${NOW_S}`,
    `t=now,v1=${mac}`,
    `t=${NOW_S},v1=${mac.slice(0, 63)}`,
    `t=${NOW_S},v0=${mac}`,
  ]) {
    await refused(t, BODY, header);
  }
});

test.serial('a signature over an empty body does not admit a non-empty one', async (t) => {
  await refused(t, BODY, signPayload(NEW_SECRET, '', NOW_S));
});

test('registerInbound makes one signature strategy per integration kind available to routes', async (t) => {
  const bare = Hapi.server({ host: '127.0.0.1', port: 0 });
  registerInbound(bare, { now: () => NOW_MS }, [svcSignatureVerifier('issuer', secrets([NEW_SECRET]))]);
  t.notThrows(() =>
    bare.route({
      method: 'POST',
      path: '/hook/{wid}',
      options: {
        auth: { strategy: inboundStrategy('issuer'), payload: 'required' },
        payload: { parse: false, output: 'data' },
      },
      handler: () => ({}),
    }),
  );
});
