import test from 'ava';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { httpbis, createSigner, createVerifier } from 'http-message-signatures';
import { signatureHeaders, verify as wbaVerify } from 'web-bot-auth';
import { signerFromJWK, verifierFromJWK } from 'web-bot-auth/crypto';
import { verifyAgentRequest } from '../../src/agent-signing/index.js';
import { thumbprintOf } from '../../src/agent-signing/keys.js';
import { ROTATE_AFTER_MS, RETIRED_GRACE_MS } from '../../src/agent-signing/service.js';
import { consoleClient } from '../helpers/console.js';
import { manualClock } from '../helpers/clock.js';
import { createAgent, type AgentFixture } from '../helpers/gate.js';
import { bearer, call, type Json } from '../helpers/http.js';
import { stopAndClean } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * POST /v1/signatures/http and GET /.well-known/http-message-signatures-directory through a
 * real server on 127.0.0.1 (docs/signed-requests.md): what svc signs is verified by the npm
 * `web-bot-auth` and `http-message-signatures` packages against the served directory, what
 * `web-bot-auth` signs is verified by svc's verifier, and refusals (mandate, stopped agent, bad
 * input) are recorded in the ledger. Serial: the tests share one clock that some of them move.
 */

const DIRECTORY = '/.well-known/http-message-signatures-directory';
const clock = manualClock();
let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess({ clock });
});
test.after.always(() => stopAndClean(server));

const SHOP = { actions: ['browse', 'purchase'], domains: ['shop.example', '*.docs.example'] };

const sign = (key: string, body: unknown) =>
  call(server.url, 'POST', '/v1/signatures/http', { headers: bearer(key), json: body });

async function directory() {
  const res = await call(server.url, 'GET', DIRECTORY);
  if (res.status !== 200) throw new Error(`directory: ${res.status} ${res.text}`);
  return res;
}

type Jwk = { kty: string; crv: string; x: string; kid: string };
const keysOf = (res: { body: unknown }) => (res.body as { keys: Jwk[] }).keys;

async function signedBy(fx: AgentFixture, url: string, headers: Record<string, string> = {}) {
  const res = await sign(fx.key, { method: 'GET', url, headers });
  if (res.status !== 200) throw new Error(`sign: ${res.status} ${res.text}`);
  return res.body as { 'signature-input': string; signature: string; 'signature-agent': string };
}

test.serial(
  'an allowed request is signed with the Web Bot Auth profile, and web-bot-auth verifies it against the directory',
  async (t) => {
    const fx = await createAgent(server, [SHOP], 'shopper');
    const url = 'https://shop.example/cart?item=42';
    const res = await sign(fx.key, { method: 'get', url, headers: { Accept: 'text/html' } });
    t.is(res.status, 200, res.text);
    t.deepEqual(Object.keys(res.body).sort(), ['signature', 'signature-agent', 'signature-input']);
    t.truthy(res.headers['ratelimit-limit'], "it counts against the agent's gate rate limit");
    const sig = res.body as Record<string, string>;
    t.is(sig['signature-agent'], JSON.stringify(`${server.url}${DIRECTORY}`), 'Signature-Agent names the directory');
    t.regex(
      sig['signature-input']!,
      /^sig1=\("@method" "@target-uri" "@authority" "signature-agent" "accept"\);created=\d+;expires=\d+;nonce="[^"]+";tag="web-bot-auth";keyid="[A-Za-z0-9_-]{43}";alg="ed25519"$/,
    );
    const created = Number(/created=(\d+)/.exec(sig['signature-input']!)![1]);
    const expires = Number(/expires=(\d+)/.exec(sig['signature-input']!)![1]);
    t.is(created, Math.floor(clock.now() / 1000));
    t.true(expires - created <= 480, 'created and expires within 8 minutes');

    const dir = await directory();
    t.is(String(dir.headers['content-type']).split(';')[0], 'application/http-message-signatures-directory+json');
    const keyid = /keyid="([^"]+)"/.exec(sig['signature-input']!)![1]!;
    const jwk = keysOf(dir).find((k) => k.kid === keyid);
    t.truthy(jwk, 'the signing key is in the directory');
    t.is(await thumbprintOf(jwk!), keyid, 'keyid is the JWK thumbprint');
    t.false('d' in jwk!, 'no private half is served');

    const request = {
      method: 'GET',
      url,
      headers: {
        accept: 'text/html',
        'signature-agent': sig['signature-agent']!,
        'signature-input': sig['signature-input']!,
        signature: sig.signature!,
      },
    };
    // web-bot-auth, looking keyid up in the directory as a site does.
    await t.notThrowsAsync(
      wbaVerify(request, async (data, signature, params) => {
        const found = keysOf(dir).find((k) => k.kid === params.keyid);
        if (!found) throw new Error('unknown key');
        return (await verifierFromJWK(found))(data, signature, params);
      }),
    );
    // http-message-signatures, the same.
    const verified = await httpbis.verifyMessage(
      {
        keyLookup: async (p) => {
          const found = keysOf(dir).find((k) => k.kid === p.keyid);
          return found
            ? {
                id: found.kid,
                algs: ['ed25519'],
                verify: createVerifier(createPublicKey({ key: found, format: 'jwk' }), 'ed25519'),
              }
            : null;
        },
        requiredFields: ['@authority', 'signature-agent'],
      },
      request,
    );
    t.true(verified);
    // And a changed header or another URL is not the signed request.
    await t.throwsAsync(
      wbaVerify({ ...request, headers: { ...request.headers, accept: 'application/json' } }, async (data, s, p) => {
        const ok = await verifierFromJWK(keysOf(dir).find((k) => k.kid === p.keyid)!);
        return ok(data, s, p);
      }),
    );
    const svcKeys = new Map(keysOf(dir).map((k) => [k.kid, createPublicKey({ key: k, format: 'jwk' })]));
    const nowS = Math.floor(clock.now() / 1000);
    t.true((await verifyAgentRequest(request, svcKeys, nowS)).ok);
    const moved = await verifyAgentRequest({ ...request, url: 'https://shop.example/cart?item=43' }, svcKeys, nowS);
    t.is(moved.ok ? 'ok' : moved.reason, 'bad_signature');

    const records = await consoleClient(server, fx.wid, fx.cookie).ledger();
    const issued = records.filter((r) => r.kind === 'signature.issued' && r.subject === fx.agentId);
    t.is(issued.length, 1);
    t.like(issued[0]!.data, {
      method: 'GET',
      url: 'https://shop.example/cart',
      domain: 'shop.example',
      kid: keyid,
      created,
      expires,
      covered: ['@method', '@target-uri', '@authority', 'signature-agent', 'accept'],
    });
    t.is(issued[0]!.actor, `agent:${fx.agentId}`);
    t.false(JSON.stringify(issued[0]!.data).includes('text/html'), 'header values are not recorded');
    t.false(JSON.stringify(issued[0]!.data).includes('item=42'), 'nor the query');
  },
);

test.serial('the directory answer is signed by every key it lists, over the authority it was asked at', async (t) => {
  const fx = await createAgent(server, [SHOP], 'directory-bot');
  await signedBy(fx, 'https://a.docs.example/x');
  const dir = await directory();
  const keys = keysOf(dir);
  t.true(keys.length >= 2);
  const input = String(dir.headers['signature-input']);
  t.is(input.split('binding').length - 1, keys.length, 'one signature per listed key');
  t.regex(
    input,
    /binding0=\("@authority";req\);created=\d+;expires=\d+;tag="http-message-signatures-directory";keyid="/,
  );
  const request = { method: 'GET', url: `${server.url}${DIRECTORY}`, headers: { host: new URL(server.url).host } };
  for (const k of keys) {
    const lookup = async (p: { keyid?: string }) =>
      p.keyid === k.kid
        ? {
            id: k.kid,
            algs: ['ed25519'],
            verify: createVerifier(createPublicKey({ key: k, format: 'jwk' }), 'ed25519'),
          }
        : null;
    const response = {
      status: 200,
      headers: { 'signature-input': input, signature: String(dir.headers['signature']) },
    };
    t.true(await httpbis.verifyMessage({ keyLookup: lookup, all: false }, response, request), `key ${k.kid}`);
  }
  // Asked at another authority, the same signatures do not hold.
  const elsewhere = { ...request, url: `http://elsewhere.example${DIRECTORY}`, headers: { host: 'elsewhere.example' } };
  const k = keys[0]!;
  const wrong = await httpbis
    .verifyMessage(
      {
        keyLookup: async (p) =>
          p.keyid === k.kid
            ? {
                id: k.kid,
                algs: ['ed25519'],
                verify: createVerifier(createPublicKey({ key: k, format: 'jwk' }), 'ed25519'),
              }
            : null,
      },
      { status: 200, headers: { 'signature-input': input, signature: String(dir.headers['signature']) } },
      elsewhere,
    )
    .catch(() => false);
  t.false(wrong);
});

test.serial(
  "a request web-bot-auth signs is verified by svc's verifier; a different body or a missing component is refused",
  async (t) => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const jwk = privateKey.export({ format: 'jwk' });
    const kid = await thumbprintOf(publicKey.export({ format: 'jwk' }) as { kty: string; crv: string; x: string });
    const signer = await signerFromJWK({ ...jwk, kid } as JsonWebKey);
    const keys = new Map([[kid, publicKey]]);
    const now = new Date(clock.now());
    const request = {
      method: 'GET',
      url: 'https://site.example/page',
      headers: { 'signature-agent': '"https://bots.example/.well-known/http-message-signatures-directory"' } as Record<
        string,
        string
      >,
    };
    const made = await signatureHeaders(request, signer, { created: now, expires: new Date(now.getTime() + 300_000) });
    const signed = {
      ...request,
      headers: { ...request.headers, 'signature-input': made['Signature-Input'], signature: made.Signature },
    };
    const nowS = Math.floor(now.getTime() / 1000);
    const ok = await verifyAgentRequest(signed, keys, nowS);
    t.true(ok.ok, JSON.stringify(ok));

    // One http-message-signatures makes, with the same profile.
    const byLibrary = await httpbis.signMessage(
      {
        key: createSigner(privateKey, 'ed25519', kid),
        name: 'sig2',
        fields: ['@authority', 'signature-agent'],
        params: ['created', 'expires', 'keyid', 'tag'],
        paramValues: { created: now, expires: new Date(now.getTime() + 300_000), tag: 'web-bot-auth' },
      },
      request,
    );
    const libraryOk = await verifyAgentRequest(
      { ...request, headers: byLibrary.headers as Record<string, string> },
      keys,
      Math.floor(now.getTime() / 1000),
    );
    t.true(libraryOk.ok, JSON.stringify(libraryOk));

    // Without signature-agent covered while the header is sent: refused by name.
    const bare = await signatureHeaders({ ...request, headers: {} }, signer, {
      created: now,
      expires: new Date(now.getTime() + 300_000),
    });
    const uncovered = await verifyAgentRequest(
      {
        ...signed,
        headers: { ...request.headers, 'signature-input': bare['Signature-Input'], signature: bare.Signature },
      },
      keys,
      nowS,
    );
    t.is(uncovered.ok ? 'ok' : uncovered.reason, 'missing_component');

    // A body the signature does not cover, and one its content-digest does not name.
    const body = Buffer.from('{"order":1}');
    const unsignedBody = await verifyAgentRequest(signed, keys, nowS, body);
    t.is(unsignedBody.ok ? 'ok' : unsignedBody.reason, 'missing_component');
    const digest = `sha-256=:${(await import('node:crypto')).createHash('sha256').update(body).digest('base64')}:`;
    const post = { method: 'POST', url: request.url, headers: { ...request.headers, 'content-digest': digest } };
    const withDigest = await signatureHeaders(post, signer, {
      created: now,
      expires: new Date(now.getTime() + 300_000),
      components: ['@authority', 'signature-agent', 'content-digest'],
    });
    const postSigned = {
      ...post,
      headers: { ...post.headers, 'signature-input': withDigest['Signature-Input'], signature: withDigest.Signature },
    };
    t.true((await verifyAgentRequest(postSigned, keys, nowS, body)).ok);
    const other = await verifyAgentRequest(postSigned, keys, nowS, Buffer.from('{"order":2}'));
    t.is(other.ok ? 'ok' : other.reason, 'digest_mismatch');

    // Expired, and a window longer than 8 minutes.
    const late = await verifyAgentRequest(signed, keys, nowS + 301);
    t.is(late.ok ? 'ok' : late.reason, 'expired');
    const long = await signatureHeaders(request, signer, { created: now, expires: new Date(now.getTime() + 600_000) });
    const tooLong = await verifyAgentRequest(
      {
        ...signed,
        headers: { ...request.headers, 'signature-input': long['Signature-Input'], signature: long.Signature },
      },
      keys,
      nowS,
    );
    t.is(tooLong.ok ? 'ok' : tooLong.reason, 'window_too_long');
  },
);

test.serial(
  'a domain the mandate does not name is refused 403 naming it, and recorded; nothing is signed',
  async (t) => {
    const fx = await createAgent(
      server,
      [SHOP, { actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'] }],
      'narrow',
    );
    const res = await sign(fx.key, { method: 'POST', url: 'https://bank.example/transfer', headers: {} });
    t.is(res.status, 403, res.text);
    t.is(res.body.error.type, 'signing_not_allowed');
    t.regex(res.body.error.message, /bank\.example/);
    t.like(res.body.error, { signal: 'domain_not_allowed', domain: 'bank.example' });
    // The apex of a `*.` rule is not its subdomain.
    t.is((await sign(fx.key, { method: 'GET', url: 'https://docs.example/' })).status, 403);
    t.is((await sign(fx.key, { method: 'GET', url: 'https://deep.a.docs.example/' })).status, 200);

    const none = await createAgent(
      server,
      [{ actions: ['payment'], merchants: ['acme.example'], currencies: ['EUR'] }],
      'no-domains',
    );
    const refused = await sign(none.key, { method: 'GET', url: 'https://shop.example/' });
    t.is(refused.status, 403);

    const records = await consoleClient(server, fx.wid, fx.cookie).ledger();
    const mine = records.filter((r) => r.subject === fx.agentId && r.kind.startsWith('signature.'));
    t.deepEqual(
      mine.map((r) => [r.kind, (r.data as { domain: string }).domain]),
      [
        ['signature.refused', 'bank.example'],
        ['signature.refused', 'docs.example'],
        ['signature.issued', 'deep.a.docs.example'],
      ],
    );
    t.like(mine[0]!.data, { error: 'signing_not_allowed', url: 'https://bank.example/transfer' });
    const dir = await directory();
    const noneKeys = records.filter((r) => r.subject === none.agentId && r.kind === 'signature.issued');
    t.is(noneKeys.length, 0);
    t.true(keysOf(dir).length > 0);
  },
);

test.serial(
  'a stopped agent is refused like its model calls, recorded, and its keys leave the directory',
  async (t) => {
    const fx = await createAgent(server, [SHOP], 'to-stop');
    const sig = await signedBy(fx, 'https://shop.example/');
    const kid = /keyid="([^"]+)"/.exec(sig['signature-input'])![1]!;
    t.true(keysOf(await directory()).some((k) => k.kid === kid));

    const owner = consoleClient(server, fx.wid, fx.cookie);
    const stop = await owner.send('POST', `/agents/${fx.agentId}/stop`, { reason: 'drill' });
    t.is(stop.status, 200, stop.text);
    const res = await sign(fx.key, { method: 'GET', url: 'https://shop.example/' });
    t.is(res.status, 403, res.text);
    t.is(res.body.error.type, 'agent_stopped');
    t.regex(res.body.error.message, /stopped \(drill\); nothing was signed/);
    t.false(
      keysOf(await directory()).some((k) => k.kid === kid),
      'a stopped agent may not sign: its key is not listed',
    );
    const last = (await owner.ledger())
      .filter((r) => r.subject === fx.agentId && r.kind.startsWith('signature.'))
      .pop();
    t.like(last, { kind: 'signature.refused', data: { error: 'agent_stopped' } });

    const restart = await owner.send('POST', `/agents/${fx.agentId}/restart`);
    t.is(restart.status, 200, restart.text);
    t.true(
      keysOf(await directory()).some((k) => k.kid === kid),
      'listed again once restarted',
    );
  },
);

test.serial('bad input is 400 naming the field; nothing is signed or recorded', async (t) => {
  const fx = await createAgent(server, [SHOP], 'bad-input');
  const cases: Array<[unknown, string]> = [
    [{ method: 'GET' }, 'url'],
    [{ method: 'GET', url: 'ftp://shop.example/' }, 'url'],
    [{ method: 'GET', url: 'https://user:pw@shop.example/' }, 'url'],
    [{ method: 'G E T', url: 'https://shop.example/' }, 'method'],
    [{ method: 'GET', url: 'https://shop.example/', headers: { 'Signature-Agent': 'x' } }, 'headers'],
    [{ method: 'GET', url: 'https://shop.example/', headers: { host: 'x' } }, 'headers'],
    [{ method: 'GET', url: 'https://shop.example/', headers: { 'bad name': 'x' } }, 'headers'],
    [{ method: 'GET', url: 'https://shop.example/', headers: { a: 'line\r\nbreak' } }, 'headers.a'],
    [{ method: 'GET', url: 'https://shop.example/', headers: { accept: 'a', Accept: 'b' } }, 'headers'],
    [{ method: 'GET', url: 'https://shop.example/', headers: { a: 1 } }, 'headers.a'],
  ];
  for (const [body, field] of cases) {
    const res = await sign(fx.key, body);
    t.is(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    t.is(res.body.error.type, 'invalid_request');
    t.true(
      (res.body.error.errors as Array<{ field: string }>).some(
        (e) => e.field === field || e.field.startsWith(`${field}.`),
      ),
      `${JSON.stringify(body)} names ${field}: ${res.text}`,
    );
  }
  const noKey = await call(server.url, 'POST', '/v1/signatures/http', {
    json: { method: 'GET', url: 'https://shop.example/' },
  });
  t.is(noKey.status, 401);
  const records = await consoleClient(server, fx.wid, fx.cookie).ledger();
  t.is(records.filter((r) => r.subject === fx.agentId && r.kind.startsWith('signature.')).length, 0);
});

test.serial(
  'rotation: a key 30 days old is replaced at the next signature; the old one stays listed 7 days, then leaves',
  async (t) => {
    const fx = await createAgent(server, [SHOP], 'rotating');
    const kidOf = (s: { 'signature-input': string }) => /keyid="([^"]+)"/.exec(s['signature-input'])![1]!;
    const first = kidOf(await signedBy(fx, 'https://shop.example/'));
    t.is(kidOf(await signedBy(fx, 'https://shop.example/')), first, 'the same key until it is due');

    clock.advance(ROTATE_AFTER_MS);
    const second = kidOf(await signedBy(fx, 'https://shop.example/'));
    t.not(second, first);
    let listed = keysOf(await directory()).map((k) => k.kid);
    t.true(listed.includes(first), 'the retired key is still listed in its grace period');
    t.true(listed.includes(second));

    clock.advance(RETIRED_GRACE_MS);
    listed = keysOf(await directory()).map((k) => k.kid);
    t.false(listed.includes(first), 'past the grace period it is gone');
    t.true(listed.includes(second));
    await signedBy(fx, 'https://shop.example/');
    const stored = await server.app.store.tables.agentSigningKeys.scan([fx.wid, fx.agentId]);
    t.deepEqual(
      stored.map((e) => e.value.kid),
      [second],
      'the retired key past grace leaves the store',
    );
    t.false(JSON.stringify(stored).includes('"d"'), 'only the sealed private half is stored');
  },
);

test.serial('the routes are in the OpenAPI document, with their schemas from joi and their errors', async (t) => {
  const res = await call(server.url, 'GET', '/openapi.json');
  t.is(res.status, 200);
  const doc = res.body as unknown as { paths: Record<string, Record<string, Json>> };
  const op = doc.paths['/v1/signatures/http']!.post;
  t.deepEqual(op.security, [{ agentKey: [] }]);
  const schema = op.requestBody.content['application/json'].schema;
  t.deepEqual(schema.required.sort(), ['method', 'url']);
  t.truthy(schema.properties.headers);
  t.deepEqual(op.responses['403']['x-svc-error-types'].sort(), ['agent_stopped', 'signing_not_allowed']);
  const dir = doc.paths['/.well-known/http-message-signatures-directory']!.get;
  t.truthy(dir);
  t.is(String((await directory()).headers['cache-control']), 'public, max-age=60');
});
