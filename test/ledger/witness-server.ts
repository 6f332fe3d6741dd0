import { createHash, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyConsistency } from '../../src/ledger/merkle.js';
import { openNote, parseCheckpointBody } from '../../src/ledger/note.js';

/**
 * A transparency-log witness on 127.0.0.1, doing what C2SP tlog-witness says a witness does with
 * `POST <prefix>/add-checkpoint`, in the spec's order:
 * - a body that is not `old <size>\n`, at most 63 base64 hash lines, a blank line and a checkpoint
 *   is 400;
 * - an origin it has no key for is 404; a checkpoint with no valid signature by that log's key
 *   is 403;
 * - an old size above the checkpoint's is 400;
 * - an old size other than the size it last cosigned for that origin (0 if none) is 409 with that
 *   size (`text/x.tlog.size`);
 * - the same size with another root is 409; a proof that does not show the new tree extends the one
 *   it cosigned (RFC 6962 consistency), or any proof from 0, is 422;
 * - otherwise it records the checkpoint as the origin's latest (checked and recorded with no
 *   await in between, so two requests cannot roll it back) and answers one cosignature line.
 * The cosignature (C2SP tlog-cosignature, Ed25519, `cosignature/v1`) is made here from the spec's
 * text, not with svc's code, so svc's reading of it is checked against a second writing.
 * `down()` stops listening (connections are refused) and `up()` listens again on the same port.
 */
export interface TestWitness {
  /** The submission prefix (ledger.witnesses[].url). */
  url: string;
  name: string;
  /** `<name>+<key id>+<base64(0x04 || key)>` */
  verifierKey: string;
  /** Trusts `vkey` (a log's signed-note verifier key, as `svc ledger key` prints it) for its origin. */
  trust(vkey: string): void;
  /** Every request answered, in order. */
  answers: Array<{ status: number; old?: number; size?: number; origin?: string }>;
  /** The latest cosigned checkpoint of an origin. */
  latest(origin: string): { size: number; root: Buffer } | undefined;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

const HASH = /^[A-Za-z0-9+/]{43}=$/;

function keyIdOf(name: string, algorithm: number, raw: Buffer): Buffer {
  return createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${name}\n`, 'utf8'), Buffer.from([algorithm]), raw]))
    .digest()
    .subarray(0, 4);
}

const rawKey = (key: KeyObject): Buffer => Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url');

/** The add-checkpoint body as old size, proof and checkpoint note; null when malformed. */
function parseRequest(text: string): { old: number; proof: Buffer[]; note: string } | null {
  const blank = text.indexOf('\n\n');
  if (blank < 0) return null;
  const head = text.slice(0, blank).split('\n');
  const note = text.slice(blank + 2);
  const old = /^old (0|[1-9][0-9]*)$/.exec(head[0] ?? '');
  const proofLines = head.slice(1);
  if (!old || proofLines.length > 63 || !proofLines.every((l) => HASH.test(l))) return null;
  return { old: Number(old[1]), proof: proofLines.map((l) => Buffer.from(l, 'base64')), note };
}

export async function startWitness(name = 'witness.test/w1'): Promise<TestWitness> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = rawKey(publicKey);
  const keyId = keyIdOf(name, 0x04, raw);
  const logs = new Map<string, { keyName: string; key: KeyObject }>();
  const state = new Map<string, { size: number; root: Buffer }>();
  const answers: TestWitness['answers'] = [];

  const cosign = (body: string): string => {
    const timestamp = BigInt(Math.floor(Date.now() / 1000));
    const signature = sign(null, Buffer.from(`cosignature/v1\ntime ${timestamp}\n${body}`, 'utf8'), privateKey);
    const time = Buffer.alloc(8);
    time.writeBigUInt64BE(timestamp);
    return `\u2014 ${name} ${Buffer.concat([keyId, time, signature]).toString('base64')}\n`;
  };

  const answer = (
    res: ServerResponse,
    status: number,
    body: string,
    seen: Omit<TestWitness['answers'][number], 'status'>,
    type = 'text/plain; charset=utf-8',
  ) => {
    answers.push({ status, ...seen });
    res.writeHead(status, { 'content-type': type }).end(body);
  };

  const addCheckpoint = (text: string, res: ServerResponse) => {
    const request = parseRequest(text);
    if (!request) return answer(res, 400, 'malformed request\n', {});
    const { old, proof, note } = request;
    const origin = note.slice(0, note.indexOf('\n'));
    const log = logs.get(origin);
    if (!log) return answer(res, 404, 'unknown log\n', { old, origin });
    const opened = openNote(note, log.keyName, log.key);
    if (!opened) return answer(res, 403, 'no valid signature by the log key\n', { old, origin });
    const checkpoint = parseCheckpointBody(opened.body);
    const seen = { old, size: checkpoint.size, origin };
    if (old > checkpoint.size) return answer(res, 400, 'old size above the checkpoint size\n', seen);
    const latest = state.get(origin);
    const latestSize = latest?.size ?? 0;
    if (old !== latestSize) return answer(res, 409, `${latestSize}\n`, seen, 'text/x.tlog.size');
    if (latest && old === checkpoint.size) {
      if (!latest.root.equals(checkpoint.rootHash))
        return answer(res, 409, `${latestSize}\n`, seen, 'text/x.tlog.size');
    } else if (
      old === 0 ? proof.length > 0 : !verifyConsistency(old, checkpoint.size, latest!.root, checkpoint.rootHash, proof)
    ) {
      return answer(res, 422, 'the consistency proof does not verify\n', seen);
    }
    state.set(origin, { size: checkpoint.size, root: checkpoint.rootHash });
    return answer(res, 200, cosign(opened.body), seen);
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST' || req.url !== '/add-checkpoint') return answer(res, 404, 'not found\n', {});
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => addCheckpoint(Buffer.concat(chunks).toString('utf8'), res));
  };

  let server: Server = createServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const closeServer = () =>
    new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    });

  return {
    url: `http://127.0.0.1:${port}`,
    name,
    verifierKey: `${name}+${keyId.toString('hex')}+${Buffer.concat([Buffer.from([0x04]), raw]).toString('base64')}`,
    trust(vkey) {
      const first = vkey.indexOf('+');
      const keyName = vkey.slice(0, first);
      const bytes = Buffer.from(vkey.slice(vkey.indexOf('+', first + 1) + 1), 'base64');
      const key = createPublicKey({
        key: { kty: 'OKP', crv: 'Ed25519', x: bytes.subarray(1).toString('base64url') },
        format: 'jwk',
      });
      logs.set(keyName, { keyName, key });
    },
    answers,
    latest: (origin) => state.get(origin),
    down: closeServer,
    async up() {
      server = createServer(handle);
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    },
    close: closeServer,
  };
}
