import { execFile } from 'node:child_process';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { authorize, createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { call } from '../helpers/http.js';
import { removeDir, ROOT, startServer, stopAndClean, svc, tempDir, type RunningServer } from '../helpers/process.js';
import { poll } from '../helpers/wait.js';
import { startWitness, type TestWitness } from './witness-server.js';

/**
 * Witnesses (ledger.witnesses): svc sends each new signed checkpoint of a workspace ledger with its
 * consistency proof to every configured witness (C2SP tlog-witness `add-checkpoint`), stores the
 * cosignatures they answer (C2SP tlog-cosignature) and serves them on
 * `GET /v1/ledger/{wid}/checkpoint`; `svc ledger verify --url --key --witness ... --quorum N`
 * requires N of them. The witnesses are loopback servers (witness-server.ts) that check what the
 * spec says a witness checks and cosign with their own code. A witness that is down or refuses
 * never stops a decision: the failure is logged and counted, and the checkpoint is sent again
 * later. A fork of the store (an LMDB copy that then decides differently, with the same key and
 * origin) is refused by a witness that saw the original, and the verifier reports it. The served
 * cosignatures are also read by Go's own signed-note code (go-cosignature/main.go, built in GOPATH
 * mode against Debian's golang-golang-x-mod-dev, as the tiles test's verifier is).
 */
const run = promisify(execFile);
const SCRAPE = 'scrape-token-witness-0123456789';
const config = (witnesses: TestWitness[]) => ({
  rateLimits: { gatePerMinute: 100_000, publicPerMinute: 100_000 },
  ledger: {
    checkpointIntervalMs: 100,
    public: true,
    witnesses: witnesses.map((w) => ({ url: w.url, publicKey: w.verifierKey })),
  },
});

let w1: TestWitness;
let w2: TestWitness;
/** Configured, but never trusts the log: it refuses every checkpoint (404, unknown log). */
let stranger: TestWitness;
let server: RunningServer;
let agent: AgentFixture;
let logKey: string;
let amount = 100;
let work: string;
let goCosignature: string;

/** What Go's note.Open says of the served checkpoint, given the log's key and these witness keys. */
async function goCheck(on: RunningServer, witnesses: TestWitness[]) {
  const args = ['-url', `${on.url}/v1/ledger/${agent.wid}/checkpoint`, '-key', logKey];
  args.push('-witness', witnesses.map((w) => w.verifierKey).join(','));
  try {
    return { code: 0, ...(JSON.parse((await run(goCosignature, args)).stdout) as { cosignedBy: string[] }) };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, ...(JSON.parse(e.stdout) as { cosignedBy: string[] }) };
  }
}

const decide = async (on: RunningServer, n: number) => {
  for (let i = 0; i < n; i++) {
    const res = await authorize(on, agent.key, payment(amount++));
    if (res.status !== 200) throw new Error(`authorize: ${res.status} ${res.text}`);
  }
};

/** The served checkpoint: its size and the witnesses whose cosignature lines it carries. */
async function served(on: RunningServer): Promise<{ size: number; text: string; by: string[] }> {
  const res = await call(on.url, 'GET', `/v1/ledger/${agent.wid}/checkpoint`);
  if (res.status !== 200) return { size: 0, text: res.text, by: [] };
  const text = String(res.text);
  const by = [...text.matchAll(/^\u2014 (\S+) /gm)].map((m) => m[1]!).filter((n) => n.startsWith('witness.test/'));
  return { size: Number(text.split('\n')[1]), text, by };
}

/** The ledger's size once every record appended so far is integrated (none still waiting). */
async function ledgerSize(on: RunningServer): Promise<number> {
  const head = await poll(
    () => call(on.url, 'GET', `/api/w/${agent.wid}/ledger/checkpoint`, { headers: { cookie: agent.cookie } }),
    (r) => r.status === 200 && r.body.waiting === 0,
    { timeoutMs: 15_000, everyMs: 100 },
  );
  return head.body.size as number;
}

/** Waits until the served checkpoint covers the whole ledger and carries cosignatures by `names`. */
async function cosignedBy(on: RunningServer, names: string[], timeoutMs = 30_000) {
  const want = await ledgerSize(on);
  return poll(
    () => served(on),
    (s) => s.size === want && names.every((n) => s.by.includes(n)),
    { timeoutMs, everyMs: 100 },
  );
}

async function keyOf(on: RunningServer): Promise<string> {
  const res = await svc(['ledger', 'key', '--data-dir', on.dataDir, '--workspace', agent.wid, '--json']);
  if (res.code !== 0) throw new Error(res.stderr);
  return (JSON.parse(res.stdout) as Array<{ verifierKey: string; current: boolean }>).find((l) => l.current)!
    .verifierKey;
}

const verify = (on: RunningServer, extra: string[]) =>
  svc(['ledger', 'verify', '--url', `${on.url}/v1/ledger/${agent.wid}/`, '--key', logKey, ...extra]);

async function submissions(on: RunningServer, witness: string, result: string): Promise<number> {
  const res = await fetch(`${on.url}/metrics`, { headers: { authorization: `Bearer ${SCRAPE}` } });
  const line = (await res.text())
    .split('\n')
    .find(
      (l) =>
        l.startsWith('svc_ledger_witness_submissions_total{') &&
        l.includes(`witness="${witness}"`) &&
        l.includes(`result="${result}"`),
    );
  return line ? Number(line.split(' ').pop()) : 0;
}

test.before(async () => {
  work = await tempDir('svc-witness-');
  goCosignature = join(work, 'go-cosignature');
  // GOPATH mode against the Debian packages: nothing is downloaded.
  await run('go', ['build', '-o', goCosignature, '.'], {
    cwd: join(ROOT, 'test', 'ledger', 'go-cosignature'),
    env: { ...process.env, GO111MODULE: 'off', GOPATH: '/usr/share/gocode', GOCACHE: join(work, 'gocache') },
  });
  [w1, w2, stranger] = await Promise.all([
    startWitness('witness.test/w1'),
    startWitness('witness.test/w2'),
    startWitness('witness.test/stranger'),
  ]);
  server = await startServer({
    config: config([w1, w2, stranger]),
    env: { SVC_METRICS_TOKEN: SCRAPE },
  });
  agent = await createAgent(server);
  await decide(server, 3);
  await poll(
    () => served(server),
    (s) => s.size > 0,
    { timeoutMs: 10_000 },
  );
  logKey = await keyOf(server);
  w1.trust(logKey);
  w2.trust(logKey);
});

test.after.always(async () => {
  await stopAndClean(server);
  await Promise.all([w1?.close(), w2?.close(), stranger?.close()]);
  if (work) await removeDir(work);
});

test.serial(
  'each new checkpoint is cosigned by the witnesses, with a consistency proof they check, and served with their lines',
  async (t) => {
    const first = await cosignedBy(server, ['witness.test/w1', 'witness.test/w2']);
    t.true(first.size > 0, first.text);
    await decide(server, 4);
    const second = await cosignedBy(server, ['witness.test/w1', 'witness.test/w2']);
    t.true(second.size > first.size);
    // The witness moved from a size it had cosigned to the new one on a consistency proof it verified.
    const moved = w1.answers.filter((a) => a.status === 200 && a.old! > 0 && a.old! < a.size!);
    t.true(moved.length > 0, JSON.stringify(w1.answers));
    const origin = second.text.split('\n')[0]!;
    t.is(w1.latest(origin)?.size, second.size);
    // The log's own signature comes first; the cosignatures follow as further lines of the note.
    t.regex(
      second.text,
      new RegExp(
        `^${origin.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\n${second.size}\\n[A-Za-z0-9+/]{43}=\\n\\n\u2014 ${origin.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} `,
      ),
    );

    // Go's own note code opens the served note and verifies both cosignatures (the stranger's key finds none).
    const go = await goCheck(server, [w1, w2, stranger]);
    t.is(go.code, 0, JSON.stringify(go));
    t.deepEqual(go.cosignedBy.sort(), ['witness.test/w1', 'witness.test/w2']);

    const both = await verify(server, ['--witness', w1.verifierKey, '--witness', w2.verifierKey, '--quorum', '2']);
    t.is(both.code, 0, both.stdout + both.stderr);
    const one = await verify(server, ['--witness', w1.verifierKey, '--witness', stranger.verifierKey, '--quorum', '1']);
    t.is(one.code, 0, one.stdout + one.stderr);
    // The stranger never cosigned: a quorum that needs it fails, naming who did.
    const needsStranger = await verify(server, [
      '--witness',
      w1.verifierKey,
      '--witness',
      stranger.verifierKey,
      '--json',
    ]);
    t.is(needsStranger.code, 1);
    t.regex(needsStranger.stdout, /cosigned by witness\.test\/w1: 1 of the 2 required by --quorum/);
    // A quorum larger than the keys given is a usage error.
    const tooMany = await verify(server, ['--witness', w1.verifierKey, '--quorum', '2']);
    t.is(tooMany.code, 2, tooMany.stdout + tooMany.stderr);
    // A witness key of the wrong kind (the log's own signed-note key) is refused.
    const wrongKind = await verify(server, ['--witness', logKey]);
    t.is(wrongKind.code, 2, wrongKind.stdout + wrongKind.stderr);
    t.regex(wrongKind.stderr, /a witness key must be a cosignature\/v1/);
  },
);

test.serial('a witness that refuses does not stop decisions: its refusals are logged and counted', async (t) => {
  await decide(server, 2);
  await cosignedBy(server, ['witness.test/w1', 'witness.test/w2']);
  t.true(stranger.answers.length > 0);
  t.true(stranger.answers.every((a) => a.status === 404));
  t.true((await submissions(server, 'witness.test/stranger', 'refused')) > 0);
  t.true((await submissions(server, 'witness.test/w1', 'cosigned')) > 0);
  t.regex(
    server.stdout() + server.stderr(),
    /witness\.test\/stranger[^\n]*could not be witnessed|could not be witnessed[^\n]*witness\.test\/stranger/,
  );
});

test.serial(
  'a witness that is down does not stop decisions; it is tried again and cosigns once it is back',
  async (t) => {
    await w1.down();
    const before = await submissions(server, 'witness.test/w1', 'unreachable');
    await decide(server, 3);
    // w2 keeps cosigning the new checkpoints meanwhile; w1's are counted as unreachable.
    const without = await cosignedBy(server, ['witness.test/w2']);
    t.false(without.by.includes('witness.test/w1'));
    const down = await poll(
      () => submissions(server, 'witness.test/w1', 'unreachable'),
      (n) => n > before,
    );
    t.true(down > before);
    const unwitnessed = await verify(server, ['--witness', w1.verifierKey, '--quorum', '1']);
    t.is(unwitnessed.code, 1);
    t.regex(unwitnessed.stdout, /none of the given witnesses/);

    await w1.up();
    const back = await cosignedBy(server, ['witness.test/w1', 'witness.test/w2']);
    t.is(back.size, without.size);
    const verified = await verify(server, ['--witness', w1.verifierKey, '--witness', w2.verifierKey]);
    t.is(verified.code, 0, verified.stdout + verified.stderr);
  },
);

test.serial(
  'a fork of the store is refused by a witness that saw the original, and the verifier reports it',
  async (t) => {
    const witness = await startWitness('witness.test/fork');
    const dirs: string[] = [];
    let original: RunningServer | undefined;
    let fork: RunningServer | undefined;
    try {
      // The original, with only this witness, cosigned.
      original = await startServer({ config: config([witness]) });
      dirs.push(original.dataDir);
      const ownAgent = agent;
      agent = await createAgent(original);
      await decide(original, 3);
      await poll(
        () => served(original!),
        (s) => s.size > 0,
        { timeoutMs: 10_000 },
      );
      const forkKey = await keyOf(original);
      witness.trust(forkKey);
      await cosignedBy(original, ['witness.test/fork']);

      // A copy of its store (the LMDB files, while it is stopped): the same key, origin and history.
      await original.stop();
      const copy = await tempDir('svc-fork-');
      dirs.push(copy);
      await cp(original.dataDir, copy, { recursive: true });
      original = await startServer({ dataDir: original.dataDir, config: config([witness]) });
      // The original goes on, and the witness cosigns its next checkpoint.
      await decide(original, 3);
      const truth = await cosignedBy(original, ['witness.test/fork']);

      // The copy decides differently, and more: a fork of the log, signed with the same key.
      fork = await startServer({ dataDir: copy, config: config([witness]) });
      amount += 1000;
      await decide(fork, 5);
      const forkSize = await ledgerSize(fork);
      t.true(forkSize > truth.size);
      // The fork's copy of the store says the witness last cosigned an older size: the witness answers
      // 409 with the size it saw, and from that size the fork's consistency proof does not verify
      // against the root it cosigned: 422.
      const refused = await poll(
        () => witness.answers.filter((a) => a.size === forkSize && a.status === 422),
        (r) => r.length > 0,
        { timeoutMs: 30_000 },
      );
      t.true(
        refused.some((a) => a.old === truth.size),
        JSON.stringify(witness.answers),
      );
      t.is(witness.latest(truth.text.split('\n')[0]!)?.size, truth.size);
      t.true(witness.answers.every((a) => !(a.size === forkSize && a.status === 200)));
      const logged = await poll(
        () => fork!.stdout() + fork!.stderr(),
        (out) => /a witness refused a ledger checkpoint/.test(out),
      );
      t.regex(
        logged,
        /"level":50[^\n]*"witness":"witness\.test\/fork"[^\n]*"status":(409|422)[^\n]*a witness refused a ledger checkpoint/,
      );

      // The fork is a valid log by itself; only the witness's quorum shows it is not the one others saw.
      logKey = forkKey;
      const alone = await verify(fork, []);
      t.is(alone.code, 0, alone.stdout + alone.stderr);
      const forked = await verify(fork, ['--witness', witness.verifierKey, '--quorum', '1']);
      t.is(forked.code, 1, forked.stdout + forked.stderr);
      t.regex(forked.stdout, /none of the given witnesses/);
      const honest = await verify(original, ['--witness', witness.verifierKey, '--quorum', '1']);
      t.is(honest.code, 0, honest.stdout + honest.stderr);
      t.deepEqual((await goCheck(fork, [witness])).cosignedBy, []);
      t.deepEqual((await goCheck(original, [witness])).cosignedBy, ['witness.test/fork']);
      agent = ownAgent;
    } finally {
      await Promise.all([original?.stop(), fork?.stop()]);
      await Promise.all(dirs.map((d) => removeDir(d)));
      await witness.close();
    }
  },
);

test.serial(
  'with two workers both submit, and the witness cosigns the newest checkpoint without refusing either',
  async (t) => {
    const witness = await startWitness('witness.test/workers');
    let workers: RunningServer | undefined;
    const ownAgent = agent;
    const ownKey = logKey;
    try {
      workers = await startServer({ args: ['--workers', '2'], config: config([witness]) });
      agent = await createAgent(workers);
      await decide(workers, 4);
      await poll(
        () => served(workers!),
        (s) => s.size > 0,
        { timeoutMs: 10_000 },
      );
      logKey = await keyOf(workers);
      witness.trust(logKey);
      for (let round = 0; round < 3; round++) {
        await Promise.all([decide(workers, 3), decide(workers, 3)]);
        await cosignedBy(workers, ['witness.test/workers']);
      }
      // A second worker's submission of a checkpoint the other already had cosigned is a 409 with
      // the same size, then the same checkpoint again; never a consistency failure.
      t.deepEqual(
        witness.answers.filter((a) => a.status === 422 || a.status === 400 || a.status === 403),
        [],
      );
      t.notRegex(workers.stdout() + workers.stderr(), /a witness refused a ledger checkpoint/);
      const verified = await verify(workers, ['--witness', witness.verifierKey]);
      t.is(verified.code, 0, verified.stdout + verified.stderr);
    } finally {
      await stopAndClean(workers);
      await witness.close();
      agent = ownAgent;
      logKey = ownKey;
    }
  },
);
