import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import Iron from '@hapi/iron';
import test from 'ava';
import { unsealPrivateKey } from '../../src/signing/crypto.js';
import { deriveKey } from '../../src/lib/seal.js';
import { loadMasterKey } from '../../src/store/index.js';
import { bearer, call, csrf } from '../helpers/http.js';
import { startServer, svc, type RunningServer, stopAndClean } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * Secrets at rest: after real use (a sign-in, keys minted locally and through the API, a service
 * token), no file of the data dir but master.key holds a password, a key, a token, a session
 * secret or a private signing key, in clear or as its raw bytes. Keys and tokens are stored only
 * as hashes; signing keys only sealed.
 */

let server: RunningServer | undefined;

test.after.always(() => stopAndClean(server));

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else out.push(path);
  }
  return out;
}

/** The forms a secret could take on disk: its text, and the raw random bytes behind a prefix_base64url value. */
function forms(secret: string): Buffer[] {
  const found = [Buffer.from(secret, 'utf8')];
  const m = /^[a-z]+_([A-Za-z0-9_-]{43})$/.exec(secret);
  if (m) found.push(Buffer.from(m[1]!, 'base64url'));
  // An Ed25519 private key (JWK d): its 32 raw bytes.
  if (/^[A-Za-z0-9_-]{43}$/.test(secret)) found.push(Buffer.from(secret, 'base64url'));
  return found;
}

test('no file in the data dir but master.key holds a password, key, token or session secret; master.key is 0600', async (t) => {
  server = await startServer();
  const { dataDir, url } = server;
  const wid = server.boot.workspaceId!;
  const password = server.boot.owner!.password;

  // A session: the cookie seals a random session secret.
  const signIn = await call(url, 'POST', '/api/session', {
    headers: csrf,
    json: { email: 'admin@localhost', password },
  });
  t.is(signIn.status, 200, signIn.text);
  const setCookie = String(([] as string[]).concat(signIn.headers['set-cookie'] as string | string[])[0]);
  const sealed = /^sid=([^;]+)/.exec(setCookie)![1]!;
  const me = await call(url, 'GET', '/api/me', { headers: { cookie: `sid=${sealed}` } });
  t.is(me.status, 200);
  const cookiePassword = deriveKey(loadMasterKey(dataDir, null), 'cookie-seal').toString('hex');
  const { sid } = (await Iron.unseal(decodeURIComponent(sealed), cookiePassword, Iron.defaults)) as { sid: string };
  t.regex(sid, /^sid_[A-Za-z0-9_-]{43}$/);

  // Keys: the first admin key on the store directly, then two through the API.
  const local = await svc(['keys', 'create', '--scope', 'admin', '--local', '--data-dir', dataDir, '--json']);
  t.is(local.code, 0, local.stderr);
  const adminKey = JSON.parse(local.stdout) as { id: string; key: string };
  const viaApi = await Promise.all(
    ['admin', 'inference'].map((scope) =>
      call(url, 'POST', '/v1/admin/keys', { headers: bearer(adminKey.key), json: { scope, principal: 'alice' } }),
    ),
  );
  for (const res of viaApi) t.is(res.status, 201, res.text);
  const keys = [adminKey, ...viaApi.map((r) => r.body as { id: string; key: string })];

  // A service token, written on the store while the server runs.
  const token = await withStore(dataDir, (app) =>
    app.services.serviceTokens.create(wid, { name: 'ci', scopes: ['agents:read'], expiresInDays: 30 }),
  );
  t.regex(token.token, /^ims_[A-Za-z0-9_-]{43}$/);

  t.is(await server.stop(), 0);

  // The receipt, ledger and ES256 receipt signing keys: their private halves, unsealed here with the master key.
  const signing = await withStore(dataDir, async (app) =>
    (await app.services.signingKeys.all()).map((record) => {
      const jwk = unsealPrivateKey(record, app.masterKey).export({ format: 'jwk' });
      return { kid: record.kid, d: String(jwk.d) };
    }),
  );
  t.is(signing.length, 3, 'a receipt key, a ledger key and an ES256 receipt key');

  const secrets: Array<[string, string]> = [
    ['owner password', password],
    ['session cookie (sealed)', sealed],
    ['session cookie (decoded)', decodeURIComponent(sealed)],
    ['session secret', sid],
    ['service token', token.token],
    ...keys.map((k, i) => [`key ${i}`, k.key] as [string, string]),
    ...signing.map((k) => [`private signing key ${k.kid}`, k.d] as [string, string]),
  ];
  const files = (await filesUnder(dataDir)).filter((f) => !f.endsWith('/master.key'));
  t.true(
    files.some((f) => f.endsWith('svc.mdb')),
    files.join(', '),
  );

  let storeBytes = Buffer.alloc(0);
  for (const file of files) {
    const bytes = await readFile(file);
    if (file.endsWith('svc.mdb')) storeBytes = bytes;
    for (const [what, secret] of secrets) {
      for (const form of forms(secret)) t.is(bytes.indexOf(form), -1, `${what} found in ${file}`);
    }
  }
  // A positive control, so the search above is known to look at the records: their ids are there.
  for (const id of [wid, token.id, ...keys.map((k) => k.id)])
    t.not(storeBytes.indexOf(Buffer.from(id)), -1, `${id} not in the store file`);

  const mode = (await stat(join(dataDir, 'master.key'))).mode & 0o777;
  t.is(mode.toString(8), '600');
});
