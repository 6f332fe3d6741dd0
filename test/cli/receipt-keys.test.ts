import test from 'ava';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { call } from '../helpers/http.js';
import { stopAndClean, svc } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';

/**
 * Receipt key rotation and revocation from the terminal, while the server runs:
 * a rotated key keeps verifying the receipts it signed; the server signs with the new key from
 * the next receipt on; a revoked key leaves the JWKS and its receipts check as `revoked`. The
 * ES256 key of the AP2 and ACP receipts rotates with it and is revoked by its own kid.
 */
let server: ServedInProcess;

test.before(async () => {
  server = await serveInProcess();
});

test.after.always(async () => {
  await stopAndClean(server);
});

test.serial('rotate, then revoke the old receipt key, with the server running', async (t) => {
  const agent = await createAgent(server);
  const first = await authorize(server, agent.key, payment(1000));
  t.is(first.status, 200);
  const oldKid = decodeProtectedHeader(first.body.receipt).kid!;

  const rotated = await svc(['keys', 'rotate-receipt-key', '--data-dir', server.dataDir, '--json']);
  t.is(rotated.code, 0, rotated.stderr);
  const { kid: newKid, retiredKid } = JSON.parse(rotated.stdout);
  t.is(retiredKid, oldKid);
  t.not(newKid, oldKid);

  const second = await authorize(server, agent.key, payment(1000));
  t.is(decodeProtectedHeader(second.body.receipt).kid, newKid, 'the very next receipt is signed with the new key');

  const jwks = (await call(server.url, 'GET', '/.well-known/jwks.json')).body;
  const sigKids = jwks.keys
    .filter((k: { use: string; alg: string }) => k.use === 'sig' && k.alg === 'EdDSA')
    .map((k: { kid: string }) => k.kid);
  t.deepEqual([...sigKids].sort(), [oldKid, newKid].sort());
  // A merchant holding the JWKS verifies both.
  for (const receipt of [first.body.receipt, second.body.receipt]) {
    const { payload } = await jwtVerify(receipt, createLocalJWKSet(jwks), { algorithms: ['EdDSA'] });
    t.is(payload.sub, agent.agentId);
  }

  const refused = await svc(['keys', 'revoke-receipt-key', '--data-dir', server.dataDir, '--json', '--', newKid]);
  t.is(refused.code, 1);
  t.is(JSON.parse(refused.stdout).error.type, 'forbidden');

  const revoked = await svc(['keys', 'revoke-receipt-key', '--data-dir', server.dataDir, '--json', '--', oldKid]);
  t.is(revoked.code, 0, revoked.stderr);
  t.is(JSON.parse(revoked.stdout).kid, oldKid);

  const after = (await call(server.url, 'GET', '/.well-known/jwks.json')).body;
  t.false(after.keys.some((k: { kid: string }) => k.kid === oldKid));
  const check = await call(server.url, 'POST', '/v1/verify', { json: { receipt: first.body.receipt } });
  t.is(check.status, 200);
  t.like(check.body, { valid: false, reason: 'revoked', claims: null });
  const stillGood = await call(server.url, 'POST', '/v1/verify', { json: { receipt: second.body.receipt } });
  t.like(stillGood.body, { valid: true, reason: null });

  const ledger = await call(server.url, 'GET', `/api/w/${agent.wid}/ledger?limit=200`, {
    headers: { cookie: agent.cookie },
  });
  const kinds = ledger.body.data.map((r: { kind: string; actor: string }) => `${r.kind} ${r.actor}`);
  t.true(kinds.includes('receipt_key.rotated operator:cli'));
  t.true(kinds.includes('receipt_key.revoked operator:cli'));
});

test.serial(
  'the rotation from the terminal also rotates the ES256 key; its old AP2 receipts verify until it is revoked',
  async (t) => {
    const agent = await createAgent(server, undefined, 'ap2-bot');
    const asked = { receipts: ['ap2', 'acp'], acp: { checkoutSessionId: 'csn_1', merchantId: 'acme_store' } };
    const first = await authorize(server, agent.key, payment(1000, asked));
    t.is(first.status, 200);
    const oldKid = decodeProtectedHeader(first.body.ap2Receipt).kid!;

    const rotated = await svc(['keys', 'rotate-receipt-key', '--data-dir', server.dataDir, '--json']);
    t.is(rotated.code, 0, rotated.stderr);
    const { es256Kid, retiredEs256Kid } = JSON.parse(rotated.stdout);
    t.is(retiredEs256Kid, oldKid);
    const second = await authorize(server, agent.key, payment(1000, asked));
    t.is(decodeProtectedHeader(second.body.ap2Receipt).kid, es256Kid, 'the very next AP2 receipt has the new key');
    t.is(decodeProtectedHeader(second.body.acpAllowance).kid, es256Kid);

    const jwks = (await call(server.url, 'GET', '/.well-known/jwks.json')).body;
    for (const token of [first.body.ap2Receipt, first.body.acpAllowance, second.body.ap2Receipt]) {
      await t.notThrowsAsync(jwtVerify(token, createLocalJWKSet(jwks), { algorithms: ['ES256'] }));
    }
    const refused = await svc(['keys', 'revoke-receipt-key', '--data-dir', server.dataDir, '--json', '--', es256Kid]);
    t.is(JSON.parse(refused.stdout).error.type, 'forbidden', 'the current ES256 key is not revoked');
    const revoked = await svc(['keys', 'revoke-receipt-key', '--data-dir', server.dataDir, '--json', '--', oldKid]);
    t.is(revoked.code, 0, revoked.stderr);
    const check = await call(server.url, 'POST', '/v1/verify', { json: { receipt: first.body.ap2Receipt } });
    t.like(check.body, { valid: false, reason: 'revoked', shape: 'ap2.payment_receipt' });
    const stillGood = await call(server.url, 'POST', '/v1/verify', { json: { receipt: second.body.ap2Receipt } });
    t.like(stillGood.body, { valid: true, shape: 'ap2.payment_receipt' });
  },
);

test.serial('revoking an unknown key id is refused, exit 1', async (t) => {
  const res = await svc(['keys', 'revoke-receipt-key', '--data-dir', server.dataDir, '--json', '--', 'no-such-kid']);
  t.is(res.code, 1);
  t.is(JSON.parse(res.stdout).error.type, 'not_found');
});
