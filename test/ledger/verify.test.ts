import test from 'ava';
import { expectStatus, ownerConsole, type LedgerRecord, type Person } from '../helpers/console.js';
import { createAgent } from '../helpers/gate.js';
import { assertError, bearer, call } from '../helpers/http.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { stopAndClean } from '../helpers/process.js';
import { serviceToken } from '../helpers/tokens.js';

/**
 * The ledger as a person and a pipeline check it: GET /api/w/{wid}/ledger/checkpoint (the signed
 * head), POST /api/w/{wid}/ledger/verify ("verify now", the check `svc ledger verify` makes),
 * which names the first bad record once a stored record is changed, and GET /v1/admin/evidence
 * (a token with evidence:read; the bundle itself: test/cli/evidence-bundle.test.ts).
 */
let server: ServedInProcess;
let owner: Person;

test.before(async () => {
  server = await serveInProcess();
  owner = await ownerConsole(server);
  await createAgent(server);
  await createAgent(server);
});

test.after.always(() => stopAndClean(server));

test.serial('the checkpoint signs the head; verify now passes, then names the first changed record', async (t) => {
  await server.app.services.ledger.checkpointAll();
  const head = expectStatus(await owner.get('/ledger/checkpoint'), 200, 'checkpoint').body;
  const size = (await owner.ledger()).length;
  t.true(size >= 4);
  t.is(head.size, size);
  t.is(head.checkpoint.size, size);
  t.true(head.checkpoint.note.startsWith(`${head.origin}\n${size}\n`), head.checkpoint.note);

  const verified = expectStatus(await owner.send('POST', '/ledger/verify', {}), 200, 'verify').body;
  t.like(verified, { ok: true, size, firstBadIndex: null, problem: null, workspaceId: owner.wid });
  t.true(verified.checkpoints >= 1);
  // A console write: refused cross-site.
  assertError(
    t,
    await call(server.url, 'POST', owner.api('/ledger/verify'), { headers: { cookie: owner.cookie }, json: {} }),
    403,
    'csrf',
  );

  // Someone with the store changes record 1's data: verify now names it.
  const { store } = server.app;
  const entry = (await store.tables.ledger.get([owner.wid, 1]))!;
  const record = JSON.parse(entry.bytes) as LedgerRecord;
  await store.write(async (tx) => {
    await tx.ledger.put([owner.wid, 1], {
      ...entry,
      bytes: entry.bytes.replace(JSON.stringify(record.kind), JSON.stringify(`${record.kind}x`)),
    });
  });
  const broken = expectStatus(await owner.send('POST', '/ledger/verify', {}), 200, 'verify').body;
  t.like(broken, { ok: false, firstBadIndex: 1 });
  t.is(typeof broken.problem, 'string');
});

test.serial('a token with evidence:read takes the evidence bundle; other scopes and no token do not', async (t) => {
  const token = await serviceToken(owner, 'auditor', ['evidence:read']);
  const bundle = await call(server.url, 'GET', '/v1/admin/evidence', { headers: bearer(token) });
  t.is(bundle.status, 200, bundle.text);
  t.is(bundle.body.origin.endsWith(owner.wid), true, bundle.body.origin);
  t.true(Array.isArray(bundle.body.records) && bundle.body.records.length >= 4);
  const other = await serviceToken(owner, 'not-auditor', ['agents:read']);
  assertError(t, await call(server.url, 'GET', '/v1/admin/evidence', { headers: bearer(other) }), 403, 'missing_scope');
  assertError(t, await call(server.url, 'GET', '/v1/admin/evidence'), 401, 'unauthenticated');
});
