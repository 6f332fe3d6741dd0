import { createHash } from 'node:crypto';
import test from 'ava';
import canonicalize from 'canonicalize';
import { canonicalJson } from '../../src/lib/canonical-json.js';
import { leafHash } from '../../src/ledger/merkle.js';
import { authorize, createAgent, payment } from '../helpers/gate.js';
import { call } from '../helpers/http.js';
import { initArgs, removeDir, startServer, svc, tempDir } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';
import type { App } from '../../src/app.js';

/**
 * `svc ledger verify`: recomputes the Merkle tree from the stored bytes, checks
 * every signed checkpoint and names the first bad record. The tampering below is what someone
 * with write access to the LMDB file could do; each kind must be caught.
 */
async function ledgerWithCheckpoint(): Promise<{ dataDir: string; wid: string; size: number }> {
  const server = await startServer();
  const agent = await createAgent(server);
  for (const amount of [100, 200, 9000, 300]) await authorize(server, agent.key, payment(amount));
  // SIGTERM: the server signs a last checkpoint over everything on its way out.
  t_is(await server.stop(), 0);
  const size = await withStore(server.dataDir, async (app) => (await app.services.ledger.head(agent.wid))!.size);
  return { dataDir: server.dataDir, wid: agent.wid, size };
}

function t_is(actual: unknown, expected: unknown): void {
  if (actual !== expected) throw new Error(`expected ${String(expected)}, got ${String(actual)}`);
}

/** Runs `fn` on a fresh ledger with a checkpoint (see ledgerWithCheckpoint), then removes its data dir. */
async function withLedger(
  fn: (ledger: { dataDir: string; wid: string; size: number }) => Promise<void>,
): Promise<void> {
  const ledger = await ledgerWithCheckpoint();
  try {
    await fn(ledger);
  } finally {
    await removeDir(ledger.dataDir);
  }
}

/** Changes the stored ledger in one write, as someone with write access to the LMDB file could. */
function tamper(dataDir: string, change: (app: App) => Promise<void>): Promise<void> {
  return withStore(dataDir, (app) => app.store.write(() => change(app)));
}

async function verify(dataDir: string) {
  const res = await svc(['ledger', 'verify', '--data-dir', dataDir, '--json']);
  return {
    code: res.code,
    doc: JSON.parse(res.stdout) as {
      ok: boolean;
      ledgers: Array<{
        ok: boolean;
        size: number;
        checkpoints: number;
        firstBadIndex: number | null;
        problem: string | null;
      }>;
    },
    stdout: res.stdout,
  };
}

test.serial('an untouched ledger verifies: exit 0, every record under a signed checkpoint', async (t) => {
  await withLedger(async ({ dataDir, size }) => {
    const { code, doc } = await verify(dataDir);
    t.is(code, 0);
    t.true(doc.ok);
    t.is(doc.ledgers[0]!.size, size);
    t.true(doc.ledgers[0]!.checkpoints >= 1);
    const human = await svc(['ledger', 'verify', '--data-dir', dataDir]);
    t.is(human.code, 0);
    t.regex(human.stdout, new RegExp(`ok .*/ws_\\w+: ${size} records`));
  });
});

test.serial('an edited record is named by its index: exit 1', async (t) => {
  await withLedger(async ({ dataDir, wid }) => {
    await tamper(dataDir, async (app) => {
      const entry = (await app.store.tables.ledger.get([wid, 5]))!;
      await app.store.tables.ledger.put([wid, 5], {
        ...entry,
        bytes: entry.bytes.replace('"deny"', '"allow"').replace('"allow"', '"allow" '),
      });
    });
    const { code, doc } = await verify(dataDir);
    t.is(code, 1);
    t.false(doc.ok);
    t.is(doc.ledgers[0]!.firstBadIndex, 5);
    const human = await svc(['ledger', 'verify', '--data-dir', dataDir]);
    t.is(human.code, 1);
    t.regex(human.stdout, /BROKEN .*first bad record: index 5/);
  });
});

test.serial(
  'a record rewritten whole (canonical bytes, matching leaf hash) breaks the signed checkpoint',
  async (t) => {
    await withLedger(async ({ dataDir, wid }) => {
      await tamper(dataDir, async (app) => {
        // Record 5 is the refusal of the 9000 EUR payment: make it look allowed.
        const entry = (await app.store.tables.ledger.get([wid, 5]))!;
        const record = JSON.parse(entry.bytes);
        t.is(record.data.decision, 'deny');
        record.kind = 'action.allowed';
        record.data = { ...record.data, decision: 'allow', signals: [] };
        const bytes = canonicalJson(record);
        await app.store.tables.ledger.put([wid, 5], { bytes, leaf: leafHash(bytes).toString('base64url') });
      });
      const { code, doc } = await verify(dataDir);
      t.is(code, 1);
      t.false(doc.ok);
      t.regex(doc.ledgers[0]!.problem!, /do not match the signed checkpoint/);
      t.true(doc.ledgers[0]!.firstBadIndex! <= 5);
    });
  },
);

test.serial('removing the newest record is caught by the checkpoint that covered it', async (t) => {
  await withLedger(async ({ dataDir, wid, size }) => {
    await tamper(dataDir, async (app) => {
      await app.store.tables.ledger.remove([wid, size - 1]);
      // Hide it from the head too, as a careful forger would.
      const head = (await app.store.tables.ledgerHeads.get(wid))!;
      await app.store.tables.ledgerHeads.put(wid, { ...head, size: size - 1 });
    });
    const { code, doc } = await verify(dataDir);
    t.is(code, 1);
    t.is(doc.ledgers[0]!.firstBadIndex, size - 1);
    t.regex(doc.ledgers[0]!.problem!, /missing/);
  });
});

test.serial('a checkpoint signed by another key is refused', async (t) => {
  await withLedger(async ({ dataDir, wid }) => {
    await tamper(dataDir, async (app) => {
      const [first] = await app.store.tables.checkpoints.scan([wid]);
      const note = first!.value.note;
      // Flip one character of the signature.
      const i = note.lastIndexOf(' ') + 5;
      const flipped = note.slice(0, i) + (note[i] === 'A' ? 'B' : 'A') + note.slice(i + 1);
      await app.store.tables.checkpoints.put(first!.key, { ...first!.value, note: flipped });
    });
    const { code, doc } = await verify(dataDir);
    t.is(code, 1);
    t.regex(doc.ledgers[0]!.problem!, /not signed by a ledger key/);
  });
});

test.serial('an auditor with only the API records, RFC 8785 and SHA-256 gets the signed checkpoint root', async (t) => {
  const server = await startServer();
  try {
    const agent = await createAgent(server);
    for (const amount of [100, 9000]) await authorize(server, agent.key, payment(amount));
    t.is(await server.stop(), 0);
    const checkpoint = await withStore(
      server.dataDir,
      async (app) => (await app.store.tables.checkpoints.scan([agent.wid], { reverse: true, limit: 1 }))[0]!.value,
    );
    const restarted = await startServer({ dataDir: server.dataDir });
    try {
      const res = await call(restarted.url, 'GET', `/api/w/${agent.wid}/ledger?limit=200`, {
        headers: { cookie: agent.cookie },
      });
      t.is(res.status, 200);
      const records = (res.body.data as unknown[]).slice(0, checkpoint.size);
      // An independent RFC 9162 Merkle tree hash over the RFC 8785 bytes of each record.
      const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
      const mth = (leaves: Buffer[]): Buffer => {
        if (leaves.length === 1) return sha(Buffer.from([0]), leaves[0]!);
        let k = 1;
        while (k * 2 < leaves.length) k *= 2;
        return sha(Buffer.from([1]), mth(leaves.slice(0, k)), mth(leaves.slice(k)));
      };
      const root = mth(records.map((r) => Buffer.from(String(canonicalize(r)), 'utf8')));
      const [, size, b64] = checkpoint.note.split('\n');
      t.is(Number(size), checkpoint.size);
      t.is(root.toString('base64'), b64 ?? '');
    } finally {
      await restarted.stop();
    }
  } finally {
    await removeDir(server.dataDir);
  }
});

test('an empty ledger: ledger verify says there is nothing to verify yet, and exits 0', async (t) => {
  const base = await tempDir();
  try {
    const dataDir = `${base}/data`;
    const init = await svc(initArgs(dataDir));
    t.is(init.code, 0, init.stderr);
    const text = await svc(['ledger', 'verify', '--data-dir', dataDir]);
    t.is(text.code, 0, text.stderr);
    t.is(text.stdout.trim(), 'ok: no ledger records yet, nothing to verify');
    const doc = await verify(dataDir);
    t.is(doc.code, 0);
    t.deepEqual(doc.doc.ledgers, []);
  } finally {
    await removeDir(base);
  }
});
