import test from 'ava';
import { removeDir, tempDir } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * The service's signing keys (src/signing/service.ts) over a real store: a current key per use
 * made once, rotation that retires and keeps publishing, revocation that withdraws from the JWKS
 * and keeps the dates a key already had. The same through the CLI, with a server running:
 * test/cli/receipt-keys.test.ts and test/cli/receipt-key-cache.test.ts.
 */

const T0 = Date.parse('2026-11-22T12:00:00.000Z');

async function withKeys(fn: Parameters<typeof withStore>[1], clock = { now: () => T0 }): Promise<void> {
  const dir = await tempDir();
  try {
    await withStore(dir, fn, { clock });
  } finally {
    await removeDir(dir);
  }
}

test('a store without keys has no current key until a write asks for one, which makes it current', async (t) => {
  await withKeys(async (app) => {
    const keys = app.services.signingKeys;
    t.is(await keys.current('ledger'), undefined);
    t.is(await keys.currentKid('ledger'), undefined);
    const made = await app.store.write(() => keys.currentInWrite('ledger'));
    t.is(made.record.use, 'ledger');
    t.is(made.privateKey.asymmetricKeyType, 'ed25519');
    t.is(await keys.currentKid('ledger'), made.record.kid);
    t.is((await keys.current('ledger'))!.record.kid, made.record.kid);
    const again = await app.store.write(() => keys.currentInWrite('ledger'));
    t.is(again.record.kid, made.record.kid, 'the current key is used, not another one made');
    t.is(await keys.currentKid('receipt'), undefined, 'one use does not make the other');
  });
});

test('ensure makes one receipt key, one ledger key and one ES256 receipt key, once; the JWKS publishes them as "sig", "ledger" and "sig"', async (t) => {
  await withKeys(async (app) => {
    const keys = app.services.signingKeys;
    await keys.ensure();
    await keys.ensure();
    const all = await keys.all();
    t.deepEqual(all.map((k) => k.use).sort(), ['ledger', 'receipt', 'receipt-es256']);
    const receiptKid = await keys.currentKid('receipt');
    const ledgerKid = await keys.currentKid('ledger');
    const es256Kid = await keys.currentKid('receipt-es256');
    const jwks = await keys.jwks();
    t.deepEqual(
      jwks.keys.map((k) => [k.kid, k.use, k.alg]).sort(),
      [
        [receiptKid, 'sig', 'EdDSA'],
        [ledgerKid, 'ledger', 'EdDSA'],
        [es256Kid, 'sig', 'ES256'],
      ].sort(),
    );
    t.false(JSON.stringify(jwks).includes('sealed'), 'nothing private is published');
    t.deepEqual((await keys.record(receiptKid!))?.createdAt, new Date(T0).toISOString());
    t.is((await keys.publicKey(receiptKid!))?.asymmetricKeyType, 'ed25519');
    t.is((await keys.publicKey(es256Kid!))?.asymmetricKeyType, 'ec');
    t.is((await keys.current('receipt-es256'))?.privateKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    t.is(await keys.publicKey('no-such-kid'), undefined);
  });
});

test('a store made before ES256 keys gets one at the next ensure, and keeps its other keys', async (t) => {
  await withKeys(async (app) => {
    const keys = app.services.signingKeys;
    await app.store.write(async () => {
      await keys.currentInWrite('receipt');
      await keys.currentInWrite('ledger');
    });
    const receiptKid = await keys.currentKid('receipt');
    t.is(await keys.currentKid('receipt-es256'), undefined);
    await keys.ensure();
    t.is(await keys.currentKid('receipt'), receiptKid);
    t.truthy(await keys.currentKid('receipt-es256'));
  });
});

test('rotation makes a new current key and retires the old one, which stays published', async (t) => {
  const clock = { now: () => T0 };
  await withKeys(async (app) => {
    const keys = app.services.signingKeys;
    await keys.ensure();
    const old = (await keys.currentKid('receipt'))!;
    clock.now = () => T0 + 60_000;
    const { added, retired } = await app.store.write(() => keys.rotateInWrite('receipt'));
    t.is(retired?.kid, old);
    t.is(retired?.retiredAt, new Date(T0 + 60_000).toISOString());
    t.is(await keys.currentKid('receipt'), added.kid);
    t.is((await keys.current('receipt'))!.record.kid, added.kid, 'the cached key set follows the rotation');
    t.deepEqual(
      (await keys.jwks()).keys.filter((k) => k.use === 'sig' && k.alg === 'EdDSA').map((k) => k.kid),
      [added.kid, old].sort((a, b) => (a < b ? -1 : 1)),
    );
    t.is((await keys.record(old))?.retiredAt, new Date(T0 + 60_000).toISOString());
  }, clock);
});

test('revocation withdraws a key from the JWKS, keeps a retired key retired when it was, and a second revocation keeps the first date', async (t) => {
  const clock = { now: () => T0 };
  await withKeys(async (app) => {
    const keys = app.services.signingKeys;
    await keys.ensure();
    const first = (await keys.currentKid('receipt'))!;
    clock.now = () => T0 + 1_000;
    await app.store.write(() => keys.rotateInWrite('receipt'));
    clock.now = () => T0 + 2_000;
    const revokedAt = await app.store.write(async () => keys.revokeInWrite((await keys.record(first))!));
    t.is(revokedAt, new Date(T0 + 2_000).toISOString());
    t.like(await keys.record(first), { revokedAt, retiredAt: new Date(T0 + 1_000).toISOString() });
    t.false((await keys.jwks()).keys.some((k) => k.kid === first));
    t.true((await keys.verifyKeys()).revokedKids.has(first));
    clock.now = () => T0 + 3_000;
    const again = await app.store.write(async () => keys.revokeInWrite((await keys.record(first))!));
    t.is(again, revokedAt);

    // A key revoked without being retired first is retired as of its revocation.
    const ledgerKid = (await keys.currentKid('ledger'))!;
    const ledgerRevoked = await app.store.write(async () => keys.revokeInWrite((await keys.record(ledgerKid))!));
    t.like(await keys.record(ledgerKid), { revokedAt: ledgerRevoked, retiredAt: ledgerRevoked });
  }, clock);
});
