import test from 'ava';
import { expectStatus, type LedgerRecord } from '../helpers/console.js';
import { createAgent } from '../helpers/gate.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { ownedServer, serviceToken } from '../helpers/tokens.js';

/**
 * The ledger as a person and a pipeline check it: GET /api/w/{wid}/ledger/checkpoint (the signed
 * head), POST /api/w/{wid}/ledger/verify ("verify now", the check `svc ledger verify` makes),
 * which names the first bad record once a stored record is changed, and GET /v1/admin/evidence
 * (a token with evidence:read; the bundle itself: test/cli/evidence-bundle.test.ts).
 */
const served = ownedServer(test, {}, async ({ server }) => {
  await createAgent(server);
  await createAgent(server);
});

test.serial('the checkpoint signs the head; verify now passes, then names the first changed record', async (t) => {
  await served.server.app.services.ledger.checkpointAll();
  const head = expectStatus(await served.owner.get('/ledger/checkpoint'), 200, 'checkpoint').body;
  const size = (await served.owner.ledger()).length;
  t.true(size >= 4);
  t.is(head.size, size);
  t.is(head.checkpoint.size, size);
  t.true(head.checkpoint.note.startsWith(`${head.origin}\n${size}\n`), head.checkpoint.note);

  const verified = expectStatus(await served.owner.send('POST', '/ledger/verify', {}), 200, 'verify').body;
  t.like(verified, { ok: true, size, firstBadIndex: null, problem: null, workspaceId: served.owner.wid });
  t.true(verified.checkpoints >= 1);
  // A console write: refused cross-site.
  assertError(
    t,
    await call(served.server.url, 'POST', served.owner.api('/ledger/verify'), {
      headers: { cookie: served.owner.cookie },
      json: {},
    }),
    403,
    'csrf',
  );

  // Someone with the store changes record 1's data: verify now names it.
  const { store } = served.server.app;
  const entry = (await store.tables.ledger.get([served.owner.wid, 1]))!;
  const record = JSON.parse(entry.bytes) as LedgerRecord;
  await store.write(async (tx) => {
    await tx.ledger.put([served.owner.wid, 1], {
      ...entry,
      bytes: entry.bytes.replace(JSON.stringify(record.kind), JSON.stringify(`${record.kind}x`)),
    });
  });
  const broken = expectStatus(await served.owner.send('POST', '/ledger/verify', {}), 200, 'verify').body;
  t.like(broken, { ok: false, firstBadIndex: 1 });
  t.is(typeof broken.problem, 'string');
});

test.serial('a token with evidence:read takes the evidence bundle; other scopes and no token do not', async (t) => {
  const token = await serviceToken(served.owner, 'auditor', ['evidence:read']);
  const bundle = await call(served.server.url, 'GET', '/v1/admin/evidence', { headers: bearer(token) });
  t.is(bundle.status, 200, bundle.text);
  t.is(bundle.body.origin.endsWith(served.owner.wid), true, bundle.body.origin);
  t.true(Array.isArray(bundle.body.records) && bundle.body.records.length >= 4);
  const other = await serviceToken(served.owner, 'not-auditor', ['agents:read']);
  assertError(
    t,
    await call(served.server.url, 'GET', '/v1/admin/evidence', { headers: bearer(other) }),
    403,
    'missing_scope',
  );
  assertError(t, await call(served.server.url, 'GET', '/v1/admin/evidence'), 401, 'unauthenticated');
});
