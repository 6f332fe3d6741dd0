import test from 'ava';
import { decodeProtectedHeader } from 'jose';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { call } from '../helpers/http.js';
import { stopAndClean, svc } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * The server caches its signing key set (the JWKS, the revoked kids, the current key per use)
 * behind the `signingKeys` generation counter (signing/service.ts). With
 * that cache warm (receipts signed and verified, the JWKS read), a rotation and a revocation made
 * by the spawned CLI on the server's store are seen by the very next request. Serial: the CLI
 * opens the server's store.
 */
let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess();
});

test.after.always(async () => {
  await stopAndClean(server);
});

const verify = (receipt: string) => call(server.url, 'POST', '/v1/verify', { json: { receipt } });
const sigKids = async (): Promise<string[]> =>
  (await call(server.url, 'GET', '/.well-known/jwks.json')).body.keys
    .filter((k: { use: string; alg: string }) => k.use === 'sig' && k.alg === 'EdDSA')
    .map((k: { kid: string }) => k.kid)
    .sort();

test.serial(
  'a warm key set: the CLI rotates, the next receipt has the new kid; the CLI revokes, the next verify says revoked',
  async (t) => {
    const agent = await createAgent(server);
    const first = await authorize(server, agent.key, payment(1000));
    t.is(first.status, 200, first.text);
    const oldKid = decodeProtectedHeader(first.body.receipt).kid!;
    t.like((await verify(first.body.receipt)).body, { valid: true, replayed: false });
    t.like((await verify(first.body.receipt)).body, { valid: true, replayed: true });
    t.deepEqual(await sigKids(), [oldKid]);
    t.is(decodeProtectedHeader((await authorize(server, agent.key, payment(1000))).body.receipt).kid, oldKid);

    const rotated = await svc(['keys', 'rotate-receipt-key', '--data-dir', server.dataDir, '--json']);
    t.is(rotated.code, 0, rotated.stderr);
    const { kid: newKid } = JSON.parse(rotated.stdout) as { kid: string };

    const second = await authorize(server, agent.key, payment(1000));
    t.is(decodeProtectedHeader(second.body.receipt).kid, newKid, 'the very next receipt is signed with the new key');
    t.like((await verify(second.body.receipt)).body, { valid: true, replayed: false });
    t.deepEqual(await sigKids(), [oldKid, newKid].sort());

    const revoked = await svc(['keys', 'revoke-receipt-key', '--data-dir', server.dataDir, '--json', '--', oldKid]);
    t.is(revoked.code, 0, revoked.stderr);

    t.like((await verify(first.body.receipt)).body, { valid: false, reason: 'revoked', claims: null });
    t.deepEqual(await sigKids(), [newKid]);
    t.like((await verify(second.body.receipt)).body, { valid: true, replayed: true });
  },
);
