import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { authorize, createAgent, payment, type AgentFixture } from '../helpers/gate.js';
import { bearer, call, csrf } from '../helpers/http.js';
import { removeDir, ROOT, startServer, svc, tempDir, type RunningServer } from '../helpers/process.js';
import { withStore } from '../helpers/store.js';
import { verifierKey as noteVerifierKey } from '../../src/ledger/note.js';
import { leafHash, verifyInclusion } from '../../src/ledger/merkle.js';
import { checkpointRoot } from '../../src/ledger/proofs.js';

/**
 * A workspace ledger read from outside svc, in the C2SP tlog-tiles layout under
 * /v1/ledger/{wid}/ (checkpoint, tile/<L>/<N>[.p/<W>], tile/entries/<N>[.p/<W>]); who may read it;
 * `svc ledger key` and `svc ledger verify --url --key`; and an independent verifier: a Go program
 * (go-verifier/main.go) built against Go's own checksum-database code (golang.org/x/mod/sumdb/note
 * and sumdb/tlog, Debian's golang-golang-x-mod-dev), which must accept the log, prove that a later
 * log extends an earlier checkpoint, and find an entry changed on disk.
 */
const run = promisify(execFile);
const CONFIG = {
  rateLimits: { gatePerMinute: 100_000, publicPerMinute: 100_000 },
  ledger: { checkpointIntervalMs: 100 },
};

let server: RunningServer;
let agent: AgentFixture;
let token: string;
let goVerifier: string;
let work: string;

const base = () => `${server.url}/v1/ledger/${agent.wid}/`;

/** A GET of a path under the ledger's base, its bytes as served. */
async function tile(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base()}${path}`, { headers });
  return {
    status: res.status,
    cacheControl: res.headers.get('cache-control'),
    bytes: Buffer.from(await res.arrayBuffer()),
  };
}

async function signedSize(): Promise<number> {
  const res = await call(server.url, 'GET', `/v1/ledger/${agent.wid}/checkpoint`, { headers: bearer(token) });
  return res.status === 200 ? Number(String(res.text).split('\n')[1]) : 0;
}

/** Waits until the newest checkpoint covers the whole ledger (the server signs every 100 ms). */
async function settled(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const head = await call(server.url, 'GET', `/api/w/${agent.wid}/ledger/checkpoint`, {
      headers: { cookie: agent.cookie },
    });
    const size = await signedSize();
    // Settled: every record integrated (none waiting) and under the newest checkpoint.
    if (size > 0 && size === head.body.size && head.body.waiting === 0) return size;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('no checkpoint covered the ledger');
}

async function verifierKey(): Promise<string> {
  const res = await svc(['ledger', 'key', '--data-dir', server.dataDir, '--workspace', agent.wid, '--json']);
  if (res.code !== 0) throw new Error(res.stderr);
  const lines = JSON.parse(res.stdout) as Array<{ verifierKey: string; current: boolean }>;
  return lines.find((l) => l.current)!.verifierKey;
}

async function goVerify(args: string[]): Promise<{ code: number; verdict: Record<string, unknown> }> {
  try {
    const { stdout } = await run(goVerifier, args);
    return { code: 0, verdict: JSON.parse(stdout) };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, verdict: JSON.parse(e.stdout) };
  }
}

test.before(async () => {
  work = await tempDir('svc-tiles-');
  goVerifier = join(work, 'go-verifier');
  // GOPATH mode against the Debian packages: nothing is downloaded.
  await run('go', ['build', '-o', goVerifier, '.'], {
    cwd: join(ROOT, 'test', 'ledger', 'go-verifier'),
    env: { ...process.env, GO111MODULE: 'off', GOPATH: '/usr/share/gocode', GOCACHE: join(work, 'gocache') },
  });
  server = await startServer({ config: CONFIG });
  agent = await createAgent(server);
  const made = await call(server.url, 'POST', `/api/w/${agent.wid}/service-tokens`, {
    headers: { ...csrf, cookie: agent.cookie },
    json: { name: 'auditor', scopes: ['evidence:read'], expiresInDays: 1 },
  });
  if (made.status !== 201) throw new Error(`service token: ${made.status} ${made.text}`);
  token = made.body.token;
  // More than one full tile: a full level-0 tile, a partial one and a level-1 tile.
  for (let i = 0; i < 270; i++) await authorize(server, agent.key, payment(100 + i));
});

test.after.always(async () => {
  await server?.stop();
  if (server) await removeDir(server.dataDir);
  if (work) await removeDir(work);
});

test.serial('the checkpoint and tiles need evidence:read or a ledger reader, and say what may be cached', async (t) => {
  const size = await settled();
  t.true(size > 256);
  const anonymous = await call(server.url, 'GET', `/v1/ledger/${agent.wid}/checkpoint`);
  t.is(anonymous.status, 401);
  t.is(anonymous.body.error.type, 'unauthenticated');
  t.is((await call(server.url, 'GET', `/v1/ledger/${agent.wid}/tile/0/000`)).status, 401);
  const checkpoint = await call(server.url, 'GET', `/v1/ledger/${agent.wid}/checkpoint`, { headers: bearer(token) });
  t.is(checkpoint.status, 200);
  t.regex(checkpoint.headers['content-type'] as string, /^text\/plain/);
  t.is(checkpoint.headers['cache-control'], 'no-cache');
  t.regex(checkpoint.text, new RegExp(`^[^\\n]+/${agent.wid}\\n${size}\\n[A-Za-z0-9+/]{43}=\\n\\n\u2014 `));
  // The console session of the owner (who may read the ledger) reads it too.
  const bySession = await tile('tile/0/000', { cookie: agent.cookie });
  t.is(bySession.status, 200);
  t.is(bySession.cacheControl, 'private, max-age=31536000, immutable');
  t.is(bySession.bytes.length, 256 * 32);
  // A token without evidence:read may not read it.
  const reader = await call(server.url, 'POST', `/api/w/${agent.wid}/service-tokens`, {
    headers: { ...csrf, cookie: agent.cookie },
    json: { name: 'lister', scopes: ['agents:read'], expiresInDays: 1 },
  });
  const unscoped = await call(server.url, 'GET', `/v1/ledger/${agent.wid}/checkpoint`, {
    headers: bearer(reader.body.token),
  });
  t.is(unscoped.status, 403);
  t.is(unscoped.body.error.type, 'missing_scope');
  // Another workspace's ledger is not this token's.
  const other = await call(server.url, 'GET', `/v1/ledger/ws_2vFknJAOBsbff8vvQI9KOq/checkpoint`, {
    headers: bearer(token),
  });
  t.is(other.status, 403);
  const partial = await tile(`tile/0/001.p/${size - 256}`, bearer(token));
  t.is(partial.status, 200);
  t.is(partial.bytes.length, (size - 256) * 32);
  const level1 = await tile('tile/1/000.p/1', bearer(token));
  t.is(level1.status, 200);
  t.is(level1.bytes.length, 32);
});

test.serial('a tile or bundle beyond the signed log, or a path that is not a tile path, is 404', async (t) => {
  const size = await settled();
  for (const path of [
    '0/001', // only a partial second tile exists
    `0/001.p/${size - 256 + 1}`,
    '0/002.p/1',
    `entries/001.p/${size - 256 + 1}`,
    '1/000', // one level-1 hash, not 256
    '2/000.p/1',
    '0/x000/000', // not canonical
    '0/00',
    '0/000.p/0',
    '0/000.p/256',
    '64/000',
    'data/000',
  ]) {
    const res = await call(server.url, 'GET', `/v1/ledger/${agent.wid}/tile/${path}`, { headers: bearer(token) });
    t.is(res.status, 404, path);
    t.is(res.body.error.type, 'not_found', path);
  }
});

test.serial("Go's sumdb verifies the log, its tiles, its entries, and that it only grew", async (t) => {
  const before = await settled();
  const key = await verifierKey();
  t.regex(key, new RegExp(`^[^+\\s]+/${agent.wid}\\+[0-9a-f]{8}\\+[A-Za-z0-9+/]{44}$`));
  const old = join(work, 'old-checkpoint');
  await writeFile(
    old,
    (await call(server.url, 'GET', `/v1/ledger/${agent.wid}/checkpoint`, { headers: bearer(token) })).text,
  );
  for (let i = 0; i < 20; i++) await authorize(server, agent.key, payment(50));
  const after = await settled();
  t.true(after > before);
  const good = await goVerify(['-url', base(), '-key', key, '-token', token, '-old', old]);
  t.is(good.code, 0, JSON.stringify(good.verdict));
  t.like(good.verdict, { ok: true, size: after, entries: after, consistentWithOld: true });
  // A key that did not sign it is refused.
  const wrong = noteVerifierKey(key.split('+')[0]!, generateKeyPairSync('ed25519').publicKey);
  const refused = await goVerify(['-url', base(), '-key', wrong, '-token', token]);
  t.is(refused.code, 1);
  t.regex(String(refused.verdict.problem), /checkpoint signature/);
  // svc's own remote verifier, from the tiles alone.
  const own = await svc(['ledger', 'verify', '--url', base(), '--key', key, '--token', token, '--json']);
  t.is(own.code, 0, own.stderr + own.stdout);
  t.like(JSON.parse(own.stdout), { ok: true, keysFrom: 'key', ledgers: [{ ok: true, size: after }] });
});

test.serial('each record a checkpoint covers carries its inclusion proof in the evidence bundle', async (t) => {
  await settled();
  const res = await call(server.url, 'GET', '/v1/admin/evidence', { headers: bearer(token) });
  t.is(res.status, 200);
  const last = res.body.checkpoints[res.body.checkpoints.length - 1];
  const root = checkpointRoot(last.note);
  const records = res.body.records as Array<{ bytes: string; inclusion?: { size: number; proof: string[] } }>;
  t.is(records.length, last.size);
  for (const [index, r] of records.entries()) {
    t.is(r.inclusion?.size, last.size);
    const proof = r.inclusion!.proof.map((h) => Buffer.from(h, 'base64'));
    t.true(verifyInclusion(index, last.size, Buffer.from(r.bytes), root, proof), `record ${index}`);
  }
  // A proof does not hold for other bytes.
  const proof = records[3]!.inclusion!.proof.map((h) => Buffer.from(h, 'base64'));
  t.false(verifyInclusion(3, last.size, Buffer.from(records[4]!.bytes), root, proof));
});

test.serial(
  'an entry changed on disk is found by the Go verifier and by svc ledger verify --url; ledger.public opens the routes',
  async (t) => {
    await settled();
    const key = await verifierKey();
    t.is(await server.stop(), 0);
    await withStore(server.dataDir, (app) =>
      app.store.write(async () => {
        const entry = (await app.store.tables.ledger.get([agent.wid, 7]))!;
        await app.store.tables.ledger.put([agent.wid, 7], {
          ...entry,
          bytes: entry.bytes.replace(/"at":"/, '"at":"1'),
        });
      }),
    );
    server = await startServer({
      dataDir: server.dataDir,
      config: { ...CONFIG, ledger: { ...CONFIG.ledger, public: true } },
    });
    const open = await call(server.url, 'GET', `/v1/ledger/${agent.wid}/checkpoint`);
    t.is(open.status, 200);
    const entries = await tile('tile/entries/000');
    t.is(entries.status, 200);
    t.is(entries.cacheControl, 'public, max-age=31536000, immutable');
    const found = await goVerify(['-url', base(), '-key', key]);
    t.is(found.code, 1, JSON.stringify(found.verdict));
    t.like(found.verdict, { ok: false, firstBadIndex: 7 });
    const own = await svc(['ledger', 'verify', '--url', base(), '--key', key, '--json']);
    t.is(own.code, 1, own.stderr + own.stdout);
    t.like(JSON.parse(own.stdout), { ok: false, ledgers: [{ ok: false, firstBadIndex: 7 }] });

    // Rewritten whole (bytes and a matching leaf hash): the tiles no longer give the signed root.
    t.is(await server.stop(), 0);
    await withStore(server.dataDir, (app) =>
      app.store.write(async () => {
        const entry = (await app.store.tables.ledger.get([agent.wid, 260]))!;
        const bytes = entry.bytes.replace(/"at":"/, '"at":"1');
        await app.store.tables.ledger.put([agent.wid, 260], { bytes, leaf: leafHash(bytes).toString('base64url') });
      }),
    );
    server = await startServer({
      dataDir: server.dataDir,
      config: { ...CONFIG, ledger: { ...CONFIG.ledger, public: true } },
    });
    const rewritten = await goVerify(['-url', base(), '-key', key]);
    t.is(rewritten.code, 1, JSON.stringify(rewritten.verdict));
    t.regex(String(rewritten.verdict.problem), /tile/);
    const ownAgain = await svc(['ledger', 'verify', '--url', base(), '--key', key, '--json']);
    t.is(ownAgain.code, 1, ownAgain.stderr + ownAgain.stdout);
  },
);
