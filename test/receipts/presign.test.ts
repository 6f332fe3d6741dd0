import test from 'ava';
import { decodeProtectedHeader } from 'jose';
import type { ReceiptSubject } from '../../src/receipts/service.js';
import { removeDir, tempDir } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';

/**
 * The gate signs a payment's receipt ahead of its transaction (on the thread pool). That receipt
 * is used only if the key that signed it is still current when the transaction commits; a key
 * rotated in between (by `svc keys rotate-receipt-key`, say) means signing again with the new one.
 */
const action: ReceiptSubject = {
  id: 'act_AAAAAAAAAAAAAAAAAAAAAA',
  agentId: 'agt_AAAAAAAAAAAAAAAAAAAAAA',
  type: 'payment',
  payment: { amount: 100, currency: 'EUR', merchant: 'acme.example' },
};

test.serial('a receipt signed ahead is the receipt signed in the transaction, byte for byte', async (t) => {
  const dir = await tempDir();
  try {
    await withStore(dir, async (app) => {
      await app.services.signingKeys.ensure();
      const at = Date.parse('2026-11-22T12:00:00Z');
      const ahead = await app.services.receipts.presign(action, false, at);
      t.truthy(ahead);
      const inWrite = await app.store.write(() => app.services.receipts.issueInWrite(action, false, at, null));
      t.is(ahead!.receipt, inWrite, 'Ed25519 is deterministic: same claims, same key, same token');
      const used = await app.store.write(() => app.services.receipts.issueInWrite(action, false, at, ahead));
      t.is(used, ahead!.receipt);
    });
  } finally {
    await removeDir(dir);
  }
});

test.serial('after a rotation between signing ahead and committing, the new key signs', async (t) => {
  const dir = await tempDir();
  try {
    await withStore(dir, async (app) => {
      await app.services.signingKeys.ensure();
      const at = Date.now();
      const ahead = (await app.services.receipts.presign(action, false, at))!;
      const rotated = await app.services.receipts.rotateKey('operator:cli');
      t.is(rotated.retiredKid, ahead.kid);
      const issued = await app.store.write(() => app.services.receipts.issueInWrite(action, false, at, ahead));
      t.not(issued, ahead.receipt);
      t.is(decodeProtectedHeader(issued).kid, rotated.kid);
    });
  } finally {
    await removeDir(dir);
  }
});
