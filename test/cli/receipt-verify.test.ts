import test from 'ava';
import { sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Json } from '../helpers/http.js';
import { removeDir, svc, tempDir, type CliResult } from '../helpers/process.js';
import { receiptKey } from '../fixtures/receipts/test-keys.js';

/**
 * `svc receipt verify` as a spawned process, offline: against a key-set file, a key set served
 * over http by a stand-in for the deployment's JWKS host, and standard input. Exit codes: 0 valid,
 * 1 invalid (the verdict still printed), 2 usage, 3 cannot reach the key set.
 * --online is checked here against a stand-in answering POST /v1/verify (what is sent, what is
 * printed); against the real server it is tested with the gate's receipts.
 * Serial: each test spawns the binary, and two cores shared with other suites would otherwise run
 * a dozen at once and risk the per-process timeout.
 */

const fixturePath = (name: string) => fileURLToPath(new URL(`../fixtures/receipts/${name}`, import.meta.url));
const JWKS = fixturePath('jwks.json');
const OTHER_JWKS = fixturePath('other-jwks.json');
const golden = (await readFile(fixturePath('golden-receipt.jwt'), 'utf8')).trim();
const claims = JSON.parse(await readFile(fixturePath('golden-claims.json'), 'utf8'));
const jwksText = await readFile(JWKS, 'utf8');
const kid = receiptKey().kid;

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const [goldenHeader, , goldenSignature] = golden.split('.');
const tampered = `${goldenHeader}.${b64({ ...claims, amt: 999999 })}.${goldenSignature}`;

/** Parses --json output, failing the test when stdout holds anything but one JSON document. */
const onlyJson = (res: CliResult): Json => JSON.parse(res.stdout);
const show = (res: CliResult) => `exit ${res.code}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`;

let host: Server;
let hostUrl: string;
/** Every URL the key-set host was asked for (tests run at the same time: count your own). */
const requested: string[] = [];
const verifyBodies: string[] = [];
let dir: string;

test.before(async () => {
  dir = await tempDir('svc-receipt-');
  // A stand-in for the deployment's key-set host, bound to this machine only.
  host = createServer((req, res) => {
    requested.push(req.url ?? '');
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'POST' && path === '/v1/verify') {
      // Stands in for the server's answer: valid for the golden receipt, seen before.
      let body = '';
      req.on('data', (d: Buffer) => {
        body += d.toString();
      });
      req.on('end', () => {
        verifyBodies.push(body);
        const { receipt } = JSON.parse(body) as { receipt: string };
        const answer =
          receipt === golden
            ? { valid: true, shape: 'svc', claims, reason: null, problem: null, replayed: true }
            : {
                valid: false,
                shape: 'svc',
                claims: null,
                reason: 'bad_signature',
                problem: 'altered',
                replayed: false,
              };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      });
    } else if (path === '/jwks.json' || path === '/.well-known/jwks.json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(jwksText);
    } else if (req.url === '/html') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>');
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
  hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
});

test.after.always(async () => {
  await new Promise((r) => host?.close(r));
  await removeDir(dir);
});

/** An address on this machine where nothing listens. */
async function closedPort(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}`;
}

test.serial('the golden receipt against the key-set file: exit 0 and {valid, claims, reason, kid}', async (t) => {
  const res = await svc(['receipt', 'verify', golden, '--jwks', JWKS, '--json']);
  t.is(res.code, 0, show(res));
  t.deepEqual(onlyJson(res), { valid: true, shape: 'svc', claims, reason: null, problem: null, kid });
});

test.serial('human output names validity and the claims', async (t) => {
  const res = await svc(['receipt', 'verify', golden, '--jwks', JWKS]);
  t.is(res.code, 0, show(res));
  t.regex(res.stdout, new RegExp(`^VALID receipt, signed by key ${kid}\n`));
  for (const part of [
    'agent                 agt_GoldenAgentAAAAAAAAAAA',
    'action                act_GoldenActionAAAAAAAAAA',
    'type                  payment',
    'amount                EUR 12.50 (1250 minor units)',
    'merchant              acme.example',
    'approved by a person  no',
    'issued                2026-01-01T00:00:00Z by https://svc.example',
    'expires               2100-01-01T00:00:00Z',
  ]) {
    t.true(res.stdout.includes(part), part);
  }
  t.is(res.stderr, '');
});

test.serial('a tampered receipt: exit 1, reason bad_signature, the verdict as the one JSON document', async (t) => {
  const res = await svc(['receipt', 'verify', tampered, '--jwks', JWKS, '--json']);
  t.is(res.code, 1, show(res));
  t.deepEqual(onlyJson(res), {
    valid: false,
    claims: null,
    reason: 'bad_signature',
    kid,
    shape: 'svc',
    problem: 'the signature does not verify with the key the receipt names',
  });
});

test.serial(
  'a tampered receipt in human form: exit 1, INVALID with the reason explained, no claims shown',
  async (t) => {
    const res = await svc(['receipt', 'verify', tampered, '--jwks', JWKS]);
    t.is(res.code, 1, show(res));
    t.regex(res.stdout, /^INVALID receipt: bad_signature\n {2}the signature does not match/);
    t.false(res.stdout.includes('999999'), 'claims of an invalid receipt are not shown');
    t.is(res.stderr, '');
  },
);

test.serial("against another deployment's key set: exit 1, unknown_key", async (t) => {
  const res = await svc(['receipt', 'verify', golden, '--jwks', OTHER_JWKS, '--json']);
  t.is(res.code, 1, show(res));
  t.deepEqual(onlyJson(res), {
    valid: false,
    claims: null,
    reason: 'unknown_key',
    kid,
    shape: 'svc',
    problem: 'the key set holds no receipt key with the id the receipt names',
  });
});

test.serial('alg "none": exit 1', async (t) => {
  const none = `${b64({ alg: 'none', kid, typ: 'JWT' })}.${b64(claims)}.`;
  const res = await svc(['receipt', 'verify', none, '--jwks', JWKS, '--json']);
  t.is(res.code, 1, show(res));
  t.like(onlyJson(res), { valid: false, claims: null, reason: 'bad_signature' });
});

test.serial('an expired receipt: exit 1, expired', async (t) => {
  const input = `${b64({ alg: 'EdDSA', kid, typ: 'JWT' })}.${b64({ ...claims, iat: 1700000000, exp: 1700000600 })}`;
  const token = `${input}.${sign(null, Buffer.from(input), receiptKey().privateKey).toString('base64url')}`;
  const res = await svc(['receipt', 'verify', token, '--jwks', JWKS, '--json']);
  t.is(res.code, 1, show(res));
  t.deepEqual(onlyJson(res), {
    valid: false,
    claims: null,
    reason: 'expired',
    kid,
    shape: 'svc',
    problem: 'the receipt has expired',
  });
});

test.serial('garbage: exit 1, malformed', async (t) => {
  const res = await svc(['receipt', 'verify', 'not-a-receipt', '--jwks', JWKS, '--json']);
  t.is(res.code, 1, show(res));
  t.deepEqual(onlyJson(res), {
    valid: false,
    shape: null,
    claims: null,
    reason: 'malformed',
    problem: 'not a well-formed receipt',
  });
});

test.serial('- reads the receipt from standard input, whitespace trimmed', async (t) => {
  const res = await svc(['receipt', 'verify', '-', '--jwks', JWKS, '--json'], { input: `\n  ${golden}\r\n` });
  t.is(res.code, 0, show(res));
  t.like(onlyJson(res), { valid: true, reason: null, kid });
  const empty = await svc(['receipt', 'verify', '-', '--jwks', JWKS, '--json'], { input: ' \n' });
  t.is(empty.code, 2, show(empty));
  t.is(onlyJson(empty).error.exitCode, 2);
});

test.serial('--jwks URL: fetched once from the key-set host', async (t) => {
  const res = await svc(['receipt', 'verify', golden, '--jwks', `${hostUrl}/jwks.json?from=once-test`, '--json']);
  t.is(res.code, 0, show(res));
  t.deepEqual(onlyJson(res), { valid: true, shape: 'svc', claims, reason: null, problem: null, kid });
  t.is(requested.filter((u) => u === '/jwks.json?from=once-test').length, 1);
});

test.serial('without --jwks: the key set at --url (or SVC_URL) /.well-known/jwks.json', async (t) => {
  const viaFlag = await svc(['receipt', 'verify', golden, '--url', `${hostUrl}/some/path`, '--json']);
  t.is(viaFlag.code, 0, show(viaFlag));
  t.like(onlyJson(viaFlag), { valid: true, kid });
  const viaEnv = await svc(['receipt', 'verify', tampered, '--json'], { env: { SVC_URL: hostUrl } });
  t.is(viaEnv.code, 1, show(viaEnv));
  t.like(onlyJson(viaEnv), { valid: false, reason: 'bad_signature' });
});

test.serial('a key-set URL that cannot be reached, or serves no key set: exit 3', async (t) => {
  const closed = await closedPort();
  const cases = [
    ['--jwks', `${closed}/jwks.json`],
    ['--url', closed],
    ['--jwks', `${hostUrl}/missing.json`],
    ['--jwks', `${hostUrl}/html`],
    ['--online', '--url', closed],
  ];
  const results = await Promise.all(cases.map((args) => svc(['receipt', 'verify', golden, ...args, '--json'])));
  results.forEach((res, i) => {
    t.is(res.code, 3, `${cases[i]!.join(' ')}\n${show(res)}`);
    t.is(onlyJson(res).error.exitCode, 3);
  });
  const human = await svc(['receipt', 'verify', golden, '--jwks', `${closed}/jwks.json`]);
  t.is(human.code, 3, show(human));
  t.regex(human.stderr, /cannot get the key set from/);
});

test.serial('a key-set file that is missing, not JSON or not a key set: exit 2', async (t) => {
  const notJson = join(dir, 'not-json.json');
  const notJwks = join(dir, 'not-jwks.json');
  await writeFile(notJson, '{ "keys": [');
  await writeFile(notJwks, JSON.stringify({ kty: 'OKP', crv: 'Ed25519', x: 'abc' }));
  const files = [join(dir, 'missing.json'), notJson, notJwks, dir];
  const results = await Promise.all(files.map((file) => svc(['receipt', 'verify', golden, '--jwks', file, '--json'])));
  results.forEach((res, i) => {
    t.is(res.code, 2, `${files[i]}\n${show(res)}`);
    t.like(onlyJson(res).error, { type: 'invalid_jwks', exitCode: 2 });
  });
});

test.serial('usage: no receipt, --online with --jwks, a --url that is not http(s): exit 2', async (t) => {
  const cases = [
    ['receipt', 'verify', '--jwks', JWKS],
    ['receipt', 'verify', golden, '--online', '--jwks', JWKS],
    ['receipt', 'verify', golden, '--url', 'ftp://example.com'],
    ['receipt', 'verify', golden, '--online', '--url', 'nope'],
  ];
  const results = await Promise.all(cases.map((args) => svc(args)));
  results.forEach((res, i) => t.is(res.code, 2, `${cases[i]!.join(' ')}\n${show(res)}`));
});

test.serial(
  "--online: POSTs {receipt} to <url>/v1/verify and prints the server's verdict, replayed included",
  async (t) => {
    const res = await svc(['receipt', 'verify', golden, '--online', '--json'], { env: { SVC_URL: hostUrl } });
    t.is(res.code, 0, show(res));
    t.deepEqual(onlyJson(res), { valid: true, shape: 'svc', claims, reason: null, problem: null, replayed: true });
    t.true(verifyBodies.includes(JSON.stringify({ receipt: golden })));
    const human = await svc(['receipt', 'verify', golden, '--online', '--url', hostUrl]);
    t.is(human.code, 0, show(human));
    t.regex(human.stdout, /^VALID receipt\n {2}already checked online before/);
    const bad = await svc(['receipt', 'verify', tampered, '--online', '--url', hostUrl, '--json']);
    t.is(bad.code, 1, show(bad));
    t.deepEqual(onlyJson(bad), {
      valid: false,
      claims: null,
      reason: 'bad_signature',
      replayed: false,
      shape: 'svc',
      problem: 'altered',
    });
  },
);
