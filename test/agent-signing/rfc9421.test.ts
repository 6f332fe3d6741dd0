import test from 'ava';
import fc from 'fast-check';
import { createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import { digestMatches, parseSignatureInput, signatureBytes } from '../../src/agent-signing/parse.js';
import { signRequest, verifyRequest, type HttpRequestMessage } from '../../src/agent-signing/httpsig.js';

/**
 * svc's RFC 9421 signer and verifier (src/agent-signing/httpsig.ts) against the RFC's own answer:
 * appendix B.2.6, the Ed25519 signature of the test request B.2 with the test key B.1.4.
 * Ed25519 is deterministic, so svc's signer must give the RFC's bytes exactly. Then what the
 * verifier refuses, and properties over its parsers.
 */

// RFC 9421 appendix B.1.4, test-key-ed25519.
const TEST_KEY = {
  kty: 'OKP',
  crv: 'Ed25519',
  d: 'n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU',
  x: 'JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs',
};
const privateKey = createPrivateKey({ key: TEST_KEY, format: 'jwk' });
const publicKey = createPublicKey(privateKey);

// RFC 9421 appendix B.2, the test request.
const BODY = Buffer.from('{"hello": "world"}');
const REQUEST: HttpRequestMessage = {
  method: 'POST',
  url: 'https://example.com/foo?param=Value&Pet=dog',
  headers: {
    host: 'example.com',
    date: 'Tue, 20 Apr 2021 02:07:55 GMT',
    'content-type': 'application/json',
    'content-digest':
      'sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:',
    'content-length': '18',
  },
};

// RFC 9421 appendix B.2.6.
const B26_INPUT =
  'sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"';
const B26_SIGNATURE =
  'sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:';

const keyFor = (kid: string) => (kid === 'test-key-ed25519' ? publicKey : undefined);
const NOW = 1618884473 + 10;

test("B.2.6: svc signs the test request with the test key to the RFC's exact bytes", async (t) => {
  const out = await signRequest(REQUEST, {
    label: 'sig-b26',
    components: ['date', '@method', '@path', '@authority', 'content-type', 'content-length'],
    params: { created: 1618884473, keyid: 'test-key-ed25519' },
    privateKey,
  });
  t.is(out.signatureInput, B26_INPUT);
  t.is(out.signature, B26_SIGNATURE);
});

test("B.2.6: svc verifies the RFC's signature, and not the same bytes over another request", async (t) => {
  const signed = {
    ...REQUEST,
    headers: { ...REQUEST.headers, 'signature-input': B26_INPUT, signature: B26_SIGNATURE },
  };
  const ok = await verifyRequest(signed, { keyFor, now: NOW });
  t.true(ok.ok, JSON.stringify(ok));
  if (ok.ok) t.is(ok.keyid, 'test-key-ed25519');

  const otherPath = await verifyRequest(
    { ...signed, url: 'https://example.com/bar?param=Value&Pet=dog' },
    { keyFor, now: NOW },
  );
  t.deepEqual(otherPath.ok ? null : otherPath.reason, 'bad_signature');
  const otherDate = await verifyRequest(
    { ...signed, headers: { ...signed.headers, date: 'Tue, 20 Apr 2021 02:07:56 GMT' } },
    { keyFor, now: NOW },
  );
  t.deepEqual(otherDate.ok ? null : otherDate.reason, 'bad_signature');
});

test('the verifier refuses what it must: missing components, unknown keys, algorithms, time, another body', async (t) => {
  const signed = {
    ...REQUEST,
    headers: { ...REQUEST.headers, 'signature-input': B26_INPUT, signature: B26_SIGNATURE },
  };
  const reason = async (m: HttpRequestMessage, o: Partial<Parameters<typeof verifyRequest>[1]> = {}) => {
    const r = await verifyRequest(m, { keyFor, now: NOW, ...o });
    return r.ok ? 'ok' : r.reason;
  };
  t.is(await reason(signed, { requiredComponents: ['@authority', '@target-uri'] }), 'missing_component');
  t.is(await reason(signed, { requiredParams: ['expires'] }), 'missing_parameter');
  t.is(await reason(signed, { keyFor: () => undefined }), 'unknown_key');
  t.is(await reason(signed, { now: 1618884473 - 100 }), 'not_yet_valid');
  t.is(await reason({ ...signed, headers: { ...REQUEST.headers } }), 'no_signature');
  t.is(await reason({ ...signed, headers: { ...signed.headers, 'signature-input': 'sig-b26=(' } }), 'malformed');
  t.is(
    await reason({ ...signed, headers: { ...signed.headers, 'signature-input': `${B26_INPUT};alg="hmac-sha256"` } }),
    'algorithm_not_allowed',
  );
  // An RSA or P-256 key under the same keyid is never used as Ed25519.
  const { publicKey: ecKey } = await import('node:crypto').then((c) =>
    c.generateKeyPairSync('ec', { namedCurve: 'P-256' }),
  );
  t.is(await reason(signed, { keyFor: () => ecKey }), 'unknown_key');

  // A signature that covers content-digest, over another body.
  const covered = await signRequest(REQUEST, {
    label: 'sig1',
    components: ['@method', '@authority', '@path', 'content-digest'],
    params: { created: 1618884473, expires: 1618884473 + 300, keyid: 'test-key-ed25519' },
    privateKey,
  });
  const withDigest = {
    ...REQUEST,
    headers: { ...REQUEST.headers, 'signature-input': covered.signatureInput, signature: covered.signature },
  };
  t.is(await reason(withDigest, { body: BODY }), 'ok');
  t.is(await reason(withDigest, { body: Buffer.from('{"hello": "world!"}') }), 'digest_mismatch');
  t.is(await reason(withDigest, { now: 1618884473 + 301 }), 'expired');
  t.is(await reason(withDigest, { maxWindowSeconds: 60 }), 'window_too_long');
});

test('Content-Digest: sha-256 and sha-512 members name the body; anything else does not', (t) => {
  const sha = (alg: string, b: Buffer) => createHash(alg).update(b).digest('base64');
  t.true(digestMatches(`sha-256=:${sha('sha256', BODY)}:`, BODY));
  t.true(digestMatches(REQUEST.headers['content-digest']!, BODY));
  t.false(digestMatches(`sha-256=:${sha('sha256', BODY)}:`, Buffer.from('x')));
  t.false(digestMatches('md5=:AAAA:', BODY), 'no known algorithm: not checked, so not matching');
  t.false(digestMatches('sha-256="x"', BODY));
});

test('property: the parsers never throw, and answer a shape or null', (t) => {
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), fc.uint8Array({ maxLength: 64 }), (value, body) => {
      const parsed = parseSignatureInput(value);
      if (parsed !== null) {
        for (const p of parsed) {
          if (typeof p.label !== 'string' || !Array.isArray(p.components)) return false;
        }
      }
      const bytes = signatureBytes(value, 'sig1');
      if (bytes !== null && !Buffer.isBuffer(bytes)) return false;
      return typeof digestMatches(value, body) === 'boolean';
    }),
    { numRuns: 2000 },
  );
  t.pass();
});

test('property: inputs built from components and parameters parse back to them', (t) => {
  const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/);
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.oneof(name, fc.constantFrom('@method', '@authority', '@path', '@target-uri')), {
        maxLength: 8,
      }),
      fc.integer({ min: 0, max: 2 ** 31 }),
      fc.stringMatching(/^[A-Za-z0-9_-]{1,43}$/),
      (components, created, keyid) => {
        const value = `sig1=(${components.map((c) => `"${c}"`).join(' ')});created=${created};keyid="${keyid}"`;
        const parsed = parseSignatureInput(value);
        return (
          parsed !== null &&
          parsed.length === 1 &&
          parsed[0]!.label === 'sig1' &&
          JSON.stringify(parsed[0]!.components) === JSON.stringify(components.map((c) => JSON.stringify(c))) &&
          parsed[0]!.params.created === created &&
          parsed[0]!.params.keyid === keyid
        );
      },
    ),
  );
  t.pass();
});

test('property: a verifier fed any header values answers a reason, never a throw', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.string({ maxLength: 120 }), fc.string({ maxLength: 120 }), async (input, signature) => {
      const r = await verifyRequest(
        { ...REQUEST, headers: { ...REQUEST.headers, 'signature-input': input, signature } },
        { keyFor, now: NOW },
      );
      return r.ok === false && typeof r.reason === 'string';
    }),
    { numRuns: 500 },
  );
  t.pass();
});
