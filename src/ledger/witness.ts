import { isoAt, type Clock } from '../lib/clock.js';
import type { Logger } from '../lib/log.js';
import { bounded, metrics } from '../lib/metrics.js';
import { periodic, retryDelay } from '../lib/schedule.js';
import type { Store } from '../store/index.js';
import { cosignaturesIn, noteBody, parseCosignerKey, type Cosignature, type CosignerKey } from './cosignature.js';
import type { CheckpointRecord } from './records.js';
import { ledgerRepo, type LedgerRepo } from './repo.js';
import { createLedgerTiles, type LedgerTiles } from './tiles.js';
import { consistencyProofFromTiles } from './witness-proof.js';

/**
 * The ledger's witnesses (docs/gate.md#witnesses): each workspace ledger's newest signed checkpoint
 * goes to every configured witness by the C2SP tlog-witness `add-checkpoint` call, and the
 * cosignatures they answer (C2SP tlog-cosignature) are stored beside it and served with it.
 *
 * Rules:
 * - The request is `old <size>\n`, the consistency proof from that size (one base64 hash a line,
 *   none from 0), a blank line, then the signed checkpoint. `old` is the size this process last saw
 *   the witness cosign (0 when it knows none: a witness that has cosigned before answers 409 with
 *   its size, `text/x.tlog.size`, and the request is made again from that size, at most twice).
 *   A witness whose size is above this checkpoint's has cosigned a newer one (sent by another
 *   process): not a failure, the next round sends the newest.
 * - A 200's lines are kept only when they are valid cosignatures by that witness's configured key
 *   over this checkpoint; none valid counts as `invalid`.
 * - A witness that is down, slow (5 s), or refuses (403, 404, 409 for the same size, 422 ...)
 *   never holds up a decision: submitting runs on its own timer, after the checkpoint is stored.
 *   The failure is logged (a refusal at error level: it may be a split view), counted in
 *   `svc_ledger_witness_submissions_total`, and that witness is tried again for that ledger after
 *   a backoff (the checkpoint interval doubled per failure, at most a minute), with the newest
 *   checkpoint then.
 * - Every serving process submits (workers, instances): a checkpoint already cosigned by a witness
 *   in the store is not sent again, and one sent twice is answered by the witness either way (a
 *   409 with the same size, then the same checkpoint again, which it cosigns): the work is
 *   idempotent, at worst done twice.
 * - It writes only the `cosignatures` table (repo.ts), in its own writes, and reads the heads, the
 *   checkpoints and the tiles.
 */
export interface LedgerWitnesses {
  /** One round: every ledger's newest checkpoint to each witness that has not cosigned it and is due. How many it stored. */
  submitDue(): Promise<number>;
  /** Runs `submitDue` every `everyMs` (never two at once). */
  start(): void;
  /** Stops the timer and waits for a round in progress. */
  stop(): Promise<void>;
}

export interface WitnessSetting {
  url: string;
  publicKey: string;
}

export interface LedgerWitnessesDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  witnesses: readonly WitnessSetting[];
  /** How often a round runs; also the first retry's wait. */
  everyMs: number;
  /** The tiles the consistency proofs are read from (a new reader of the store when not given). */
  tiles?: LedgerTiles;
}

const TIMEOUT_MS = 5000;
const BACKOFF_MAX_MS = 60_000;
/** 409s with a new size followed before giving up for this round. */
const CONFLICT_RETRIES = 2;

interface Witness {
  url: string;
  key: CosignerKey;
}

interface WitnessState {
  /** The size this witness last cosigned for the ledger, as far as this process knows. */
  known: number;
  failures: number;
  nextAt: number;
}

type Outcome =
  | { result: 'cosigned'; cosignature: Cosignature }
  /** The witness has cosigned a larger tree (another process of this deployment sent it): nothing to do. */
  | { result: 'behind'; size: number }
  | { result: 'conflict' | 'refused' | 'failed' | 'unreachable' | 'invalid'; detail: string; status?: number };

function witnessOf(setting: WitnessSetting): Witness {
  let key: CosignerKey;
  try {
    key = parseCosignerKey(setting.publicKey);
  } catch (err) {
    throw new Error(`ledger.witnesses: ${setting.url}: ${(err as Error).message}`, { cause: err });
  }
  return { url: setting.url.replace(/\/+$/, ''), key };
}

/** The add-checkpoint body: the old size, the proof, a blank line, the checkpoint. */
export function addCheckpointBody(old: number, proof: readonly Buffer[], note: string): string {
  return `old ${old}\n${proof.map((h) => `${h.toString('base64')}\n`).join('')}\n${note}`;
}

/** The size a 409 names (`text/x.tlog.size`), or null. */
function conflictSize(res: Response, text: string): number | null {
  if (!(res.headers.get('content-type') ?? '').startsWith('text/x.tlog.size')) return null;
  const m = /^(0|[1-9][0-9]{0,15})\n?$/.exec(text);
  return m ? Number(m[1]) : null;
}

/** One add-checkpoint exchange, following a 409's size (at most CONFLICT_RETRIES times). */
async function exchange(
  w: Witness,
  tiles: LedgerTiles,
  wid: string,
  checkpoint: CheckpointRecord,
  state: WitnessState,
): Promise<Outcome> {
  for (let attempt = 0; ; attempt++) {
    const old = state.known;
    if (old > checkpoint.size) return { result: 'behind', size: old };
    const proof = await consistencyProofFromTiles(tiles, wid, old, checkpoint.size);
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${w.url}/add-checkpoint`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain; charset=utf-8' },
        body: addCheckpointBody(old, proof, checkpoint.note),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      text = await res.text();
    } catch (err) {
      return { result: 'unreachable', detail: (err as Error).message };
    }
    if (res.status === 200) {
      const found = cosignaturesIn(text, noteBody(checkpoint.note), w.key)[0];
      if (!found) return { result: 'invalid', detail: 'no valid cosignature by its key in the answer', status: 200 };
      state.known = checkpoint.size;
      return { result: 'cosigned', cosignature: found };
    }
    if (res.status === 409) {
      const size = conflictSize(res, text);
      if (size !== null && size > checkpoint.size) {
        state.known = size;
        return { result: 'behind', size };
      }
      if (size !== null && size !== old && attempt < CONFLICT_RETRIES) {
        state.known = size;
        continue;
      }
      return { result: 'conflict', detail: `it has cosigned size ${size ?? '?'} of another tree`, status: 409 };
    }
    const why = text.slice(0, 200).trim();
    return res.status >= 500
      ? { result: 'failed', detail: why, status: res.status }
      : { result: 'refused', detail: why, status: res.status };
  }
}

/** Stores one witness's cosignature of a checkpoint, beside the others'. */
async function storeCosignature(
  store: Store,
  repo: LedgerRepo,
  wid: string,
  size: number,
  cosignature: Cosignature,
  at: string,
): Promise<void> {
  await store.write(async () => {
    const lines = ((await repo.cosignatures(wid, size))?.lines ?? []).filter((l) => l.witness !== cosignature.witness);
    lines.push({ witness: cosignature.witness, line: cosignature.line, timestamp: cosignature.timestamp, at });
    await repo.putCosignatures(wid, { size, lines });
  });
}

export function createLedgerWitnesses(deps: LedgerWitnessesDeps): LedgerWitnesses {
  const { store, clock, log } = deps;
  const witnesses = deps.witnesses.map(witnessOf);
  const repo = ledgerRepo(store);
  const tiles = deps.tiles ?? createLedgerTiles({ store });
  const states = new Map<string, WitnessState>();
  const stateOf = (wid: string, w: Witness): WitnessState => {
    const key = `${wid}\u0000${w.key.name}`;
    let s = states.get(key);
    if (!s) states.set(key, (s = { known: 0, failures: 0, nextAt: 0 }));
    return s;
  };

  const report = (w: Witness, wid: string, size: number, outcome: Outcome, state: WitnessState) => {
    if (outcome.result === 'behind') {
      log.debug({ witness: w.key.name, workspaceId: wid, size, witnessSize: outcome.size }, 'a witness is ahead');
      return;
    }
    metrics.witnessSubmissions.inc({ witness: bounded(w.key.name, 'other'), result: outcome.result });
    if (outcome.result === 'cosigned') {
      state.failures = 0;
      state.nextAt = 0;
      return;
    }
    state.failures += 1;
    const retryInMs = retryDelay(state.failures, { backoffBaseMs: deps.everyMs, backoffMaxMs: BACKOFF_MAX_MS });
    state.nextAt = clock.now() + retryInMs;
    const fields = { witness: w.key.name, url: w.url, workspaceId: wid, size, ...outcome, retryInMs };
    const splitView = outcome.result === 'conflict' || outcome.result === 'invalid' || outcome.status === 422;
    if (splitView) log.error(fields, 'a witness refused a ledger checkpoint');
    else log.warn(fields, 'a ledger checkpoint could not be witnessed; it will be sent again');
  };

  const submitTo = async (w: Witness, wid: string, checkpoint: CheckpointRecord, has: Set<string>): Promise<number> => {
    const state = stateOf(wid, w);
    if (has.has(w.key.name)) {
      state.known = Math.max(state.known, checkpoint.size);
      return 0;
    }
    if (clock.now() < state.nextAt) return 0;
    const outcome = await exchange(w, tiles, wid, checkpoint, state).catch((err: unknown): Outcome => ({
      result: 'failed',
      detail: (err as Error).message,
    }));
    report(w, wid, checkpoint.size, outcome, state);
    if (outcome.result !== 'cosigned') return 0;
    await storeCosignature(store, repo, wid, checkpoint.size, outcome.cosignature, isoAt(clock.now()));
    return 1;
  };

  const submitDue = async (): Promise<number> => {
    if (witnesses.length === 0) return 0;
    let stored = 0;
    for (const { wid } of await repo.heads()) {
      const checkpoint = (await repo.checkpoints(wid, { reverse: true, limit: 1 }))[0];
      if (!checkpoint) continue;
      const has = new Set(((await repo.cosignatures(wid, checkpoint.size))?.lines ?? []).map((l) => l.witness));
      const counts = await Promise.all(witnesses.map((w) => submitTo(w, wid, checkpoint, has)));
      stored += counts.reduce((a, b) => a + b, 0);
    }
    return stored;
  };

  const loop = periodic(submitDue, deps.everyMs, (err) => log.error({ err }, 'witness submission failed'));
  return {
    submitDue,
    start: () => {
      if (witnesses.length > 0) loop.start();
    },
    stop: () => loop.stop(),
  };
}
