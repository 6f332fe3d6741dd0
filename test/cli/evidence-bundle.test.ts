import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { authorize, createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { assertError, bearer, call, type Json, type Reply } from '../helpers/http.js';
import { removeDir, stopAndClean, svc, tempDir } from '../helpers/process.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import { withStore } from '../helpers/store.js';
import { poll } from '../helpers/wait.js';
import { verifyLedger } from '../../src/ledger/verify.js';

/**
 * The evidence bundle: GET /v1/admin/evidence with a token of scope evidence:read
 * gives the ledger's records with their hashed bytes, the signed checkpoints, the consistency
 * proofs between them and the JWKS; `svc ledger verify --bundle` checks it offline with nothing
 * else, and a bundle with one byte changed fails naming the record, as does one whose decoded
 * `record` says anything its hashed bytes do not.
 */
let server: ServedInProcess;
let agent: AgentFixture;
let token: string;
let weakToken: string;
let dir: string;

test.before(async () => {
  server = await serveInProcess({ env: { SVC_LEDGER_CHECKPOINT_INTERVAL_MS: '100' } });
  agent = await createAgent(server);
  for (const amount of [100, 200, 9000]) await authorize(server, agent.key, payment(amount));
  ({ token, weakToken } = await withStore(server.dataDir, async (app) => ({
    token: (
      await app.services.serviceTokens.create(agent.wid, {
        name: 'auditor-bot',
        scopes: ['evidence:read'],
        expiresInDays: 7,
      })
    ).token,
    weakToken: (
      await app.services.serviceTokens.create(agent.wid, {
        name: 'reader-bot',
        scopes: ['agents:read'],
        expiresInDays: 7,
      })
    ).token,
  })));
  dir = await tempDir('svc-bundle-');
});

test.after.always(async () => {
  await stopAndClean(server);
  await removeDir(dir);
});

/** The bundle once the server has signed a checkpoint over every record of the set-up (every 100 ms here). */
async function bundle(): Promise<Json> {
  const covered = (res: Reply) => {
    if (res.status !== 200) throw new Error(`evidence: ${res.status} ${res.text}`);
    const last = res.body.checkpoints.at(-1);
    // Every record of the set-up, the two tokens' creations included, under a signed checkpoint.
    const tokens = res.body.records.filter(
      (r: { record: { kind: string } }) => r.record.kind === 'service_token.created',
    );
    return last && last.size === res.body.records.length && res.body.records.length >= 6 && tokens.length === 2;
  };
  const res = await poll(() => call(server.url, 'GET', '/v1/admin/evidence', { headers: bearer(token) }), covered);
  if (!covered(res)) throw new Error('no checkpoint covered the records');
  return res.body;
}

test.serial("the bundle verifies offline; with the published JWKS the keys are the deployment's", async (t) => {
  const b = await bundle();
  t.regex(b.origin, new RegExp(`/${agent.wid}$`));
  t.true(
    b.records.every(
      (r: { record: { index: number }; bytes: unknown; leaf: unknown }, i: number) =>
        r.record.index === i && typeof r.bytes === 'string' && typeof r.leaf === 'string',
    ),
  );
  t.true(b.jwks.keys.some((k: { use: string }) => k.use === 'ledger'));
  const file = join(dir, 'bundle.json');
  await writeFile(file, JSON.stringify(b));
  const res = await svc(['ledger', 'verify', '--bundle', file, '--json']);
  t.is(res.code, 0, res.stdout + res.stderr);
  t.like(JSON.parse(res.stdout), { ok: true, keysFrom: 'bundle', ledgers: [{ ok: true, size: b.records.length }] });
  const human = await svc(['ledger', 'verify', '--bundle', file]);
  t.is(human.code, 0);
  t.regex(human.stderr, /keys came from the bundle itself/);

  const jwks = join(dir, 'jwks.json');
  await writeFile(jwks, JSON.stringify((await call(server.url, 'GET', '/.well-known/jwks.json')).body));
  const pinned = await svc(['ledger', 'verify', '--bundle', file, '--jwks', jwks, '--json']);
  t.is(pinned.code, 0, pinned.stdout + pinned.stderr);
  t.like(JSON.parse(pinned.stdout), { ok: true, keysFrom: 'file' });
});

test.serial('one byte changed in a record fails, naming that record', async (t) => {
  const b = await bundle();
  const i = 4;
  const bytes: string = b.records[i].bytes;
  const at = bytes.indexOf('"kind":"') + 9;
  b.records[i].bytes = bytes.slice(0, at) + (bytes[at] === 'x' ? 'y' : 'x') + bytes.slice(at + 1);
  const file = join(dir, 'tampered.json');
  await writeFile(file, JSON.stringify(b));
  const res = await svc(['ledger', 'verify', '--bundle', file, '--json']);
  t.is(res.code, 1, res.stdout + res.stderr);
  t.like(JSON.parse(res.stdout), { ok: false, ledgers: [{ ok: false, firstBadIndex: i }] });
});

/** An evidence bundle as served, typed as far as the tests below read it. */
interface DecodedRecord {
  kind: string;
  data: { name?: string; scopes?: unknown; approvedBy?: string; payment?: { amount: number | string } };
}
interface Bundle {
  origin: string;
  records: Array<{ bytes: string; leaf: string; record?: DecodedRecord }>;
  checkpoints: Array<{ note: string }>;
  consistency: Array<{ from: number; to: number; proof: string[] }>;
  jwks: { keys: object[] };
}

test.serial(
  'a decoded record that says something its hashed bytes do not (a token name, an amount) fails, naming its index',
  async (t) => {
    const b = (await bundle()) as Bundle;
    const token = b.records.findIndex((r) => r.record?.kind === 'service_token.created');
    const paid = b.records.findIndex((r) => r.record?.kind === 'action.allowed' && r.record.data.payment);
    t.true(token >= 0 && paid >= 0, 'the bundle holds a token creation and an allowed payment');
    const forged = (i: number, forge: (record: DecodedRecord) => void): Bundle => {
      const copy = structuredClone(b);
      forge(copy.records[i]!.record!);
      return copy;
    };

    // Through the command, as an auditor runs it: exit 1, the index named.
    const renamed = join(dir, 'decoded-name.json');
    await writeFile(renamed, JSON.stringify(forged(token, (r) => (r.data.name = 'someone-else'))));
    const res = await svc(['ledger', 'verify', '--bundle', renamed, '--json']);
    t.is(res.code, 1, res.stdout + res.stderr);
    const report = JSON.parse(res.stdout);
    t.like(report, { ok: false, ledgers: [{ ok: false, firstBadIndex: token }] });
    t.regex(report.ledgers[0].problem, new RegExp(`record ${token}: its decoded "record"`));
    const repriced = join(dir, 'decoded-amount.json');
    await writeFile(
      repriced,
      JSON.stringify(forged(paid, (r) => (r.data.payment!.amount = Number(r.data.payment!.amount) + 1))),
    );
    const human = await svc(['ledger', 'verify', '--bundle', repriced]);
    t.is(human.code, 1, human.stdout + human.stderr);
    t.regex(human.stdout, new RegExp(`BROKEN .*record ${paid}: its decoded "record".*first bad record: index ${paid}`));

    // The same check, in the library the command calls, for other forgeries.
    const input = (doc: Bundle) => ({ ...doc, records: doc.records, checkpoints: doc.checkpoints });
    t.true(verifyLedger(input(b)).ok, 'the bundle as served verifies');
    for (const [what, i, forge] of [
      ['a field added', paid, (r: DecodedRecord) => (r.data.approvedBy = 'usr_nobody')],
      ['a field removed', token, (r: DecodedRecord) => delete r.data.scopes],
      ['the record replaced by another', token, (r: DecodedRecord) => Object.assign(r, b.records[paid]!.record)],
      [
        'a number written as text',
        paid,
        (r: DecodedRecord) => (r.data.payment!.amount = String(r.data.payment!.amount)),
      ],
    ] as const) {
      t.like(verifyLedger(input(forged(i, forge))), { ok: false, firstBadIndex: i }, what);
    }
    // A bundle that carries the bytes alone (no decoded copies) still verifies: `record` is for reading.
    const bare = structuredClone(b);
    for (const r of bare.records) delete r.record;
    t.true(verifyLedger(input(bare)).ok);
  },
);

test.serial('a forged consistency proof is refused', async (t) => {
  const b = await bundle();
  if (b.consistency.length === 0) {
    // One checkpoint only: append a proof that claims to link it to itself with a bogus hash.
    b.consistency.push({
      from: b.checkpoints[0].size,
      to: b.checkpoints[0].size,
      proof: [Buffer.alloc(32).toString('base64')],
    });
  } else {
    b.consistency[0].proof = [Buffer.alloc(32).toString('base64')];
  }
  const file = join(dir, 'proof.json');
  await writeFile(file, JSON.stringify(b));
  const res = await svc(['ledger', 'verify', '--bundle', file, '--json']);
  t.is(res.code, 1, res.stdout);
  t.regex(JSON.parse(res.stdout).ledgers[0].problem, /consistency proof/);
});

test('evidence needs the evidence:read scope; no token is 401', async (t) => {
  assertError(
    t,
    await call(server.url, 'GET', '/v1/admin/evidence', { headers: bearer(weakToken) }),
    403,
    'missing_scope',
  );
  assertError(t, await call(server.url, 'GET', '/v1/admin/evidence'), 401, 'unauthenticated');
});
