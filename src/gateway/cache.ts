import { createHash } from 'node:crypto';
import { pipeline, Transform, type Readable } from 'node:stream';
import { canonicalJson } from '../lib/canonical-json.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Logger } from '../lib/log.js';
import type { Store } from '../store/index.js';
import type { CachedAnswerRecord } from './records.js';
import { gatewayRepo } from './repo.js';

/**
 * The response cache (docs/gateway.md "Response cache"; issue 19 item 7).
 * Rules:
 * - Off unless the key's policy profile has `cache: { ttlSeconds }`. Skipped for a dry run and for
 *   a request with `x-svc-cache: bypass` (any other value is 400 invalid_request).
 * - An entry is found by exact match: the SHA-256 of the canonical JSON (RFC 8785) of the shape
 *   (chat completions or messages), the model that would serve first, and the body as it would
 *   be sent (after data-loss redaction; `stream` included, so a streamed request replays a
 *   stream), under the workspace: `responseCache` [wid, hash]. Another workspace's entry is never
 *   looked at.
 * - Kept only for a call that answered in full: a JSON answer, or a stream that ended well (its
 *   SSE bytes, replayed as they came). At most `maxEntryBytes` (1 MiB) each; a bigger answer is not
 *   kept. Written after the answer, in a transaction of its own (a failure is logged, never the
 *   caller's problem); the same write prunes up to 100 expired entries, oldest first, through
 *   `responseCacheExpiry` [expires at ms, wid, hash] (it reads only the oldest while that one is live).
 * - An entry past its `expiresAtMs` (by the gateway's clock) is a miss.
 * - A hit answers with what was kept, `x-svc-cache: hit`, nothing sent, nothing reserved, and is
 *   recorded as a call of zero cost and zero tokens; a miss that is kept carries `x-svc-cache: miss`.
 */
export const MAX_CACHE_ENTRY_BYTES = 1 << 20;
const PRUNE_PER_WRITE = 100;

export interface CacheSlot {
  wid: string;
  hash: string;
  ttlSeconds: number;
}

export function cacheKeyOf(input: { shape: string; model: string; body: Record<string, unknown> }): string | null {
  let text: string;
  try {
    text = canonicalJson({ shape: input.shape, model: input.model, body: input.body });
  } catch {
    // Not hashable (e.g. a lone surrogate): such a request is simply not cached.
    return null;
  }
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The response cache (the rules above). Reads and writes `responseCache` and
 * `responseCacheExpiry`; an entry is written after its answer, in a write of its own.
 */
export interface ResponseCache {
  /** The live entry for this slot, or undefined (none, or expired). */
  lookup(slot: Pick<CacheSlot, 'wid' | 'hash'>): Promise<CachedAnswerRecord | undefined>;
  /** Keeps a JSON answer (not when it is over `maxEntryBytes`). */
  keepJson(
    slot: CacheSlot,
    entry: {
      model: string;
      provider: string;
      json: Record<string, unknown>;
      inputTokens: number;
      outputTokens: number;
    },
  ): void;
  /**
   * The stream the client reads: the same bytes, also collected; once the stream ended and
   * `ended` says it ended well, they are kept. The client leaving ends the source too.
   */
  teeStream(
    slot: CacheSlot,
    source: Readable,
    ended: Promise<{ ok: boolean; inputTokens: number; outputTokens: number }>,
    served: { model: string; provider: string },
  ): Readable;
  /** Resolves once the entries being written are written (or failed): for shutdown and tests. */
  flush(): Promise<void>;
}

export interface ResponseCacheDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  /** The largest answer kept, in bytes (`MAX_CACHE_ENTRY_BYTES` by default). */
  maxEntryBytes?: number;
}

export function createResponseCache(deps: ResponseCacheDeps): ResponseCache {
  const { store, clock, log } = deps;
  const repo = gatewayRepo(store);
  const maxBytes = deps.maxEntryBytes ?? MAX_CACHE_ENTRY_BYTES;
  const pending = new Set<Promise<void>>();

  const put = (slot: CacheSlot, entry: Omit<CachedAnswerRecord, 'expiresAtMs' | 'storedAt'>): void => {
    const now = clock.now();
    const record: CachedAnswerRecord = { ...entry, expiresAtMs: now + slot.ttlSeconds * 1000, storedAt: isoAt(now) };
    const done = store
      .write(async () => {
        const old = await repo.cached(slot.wid, slot.hash);
        if (old) await repo.removeExpiry(old.expiresAtMs, slot.wid, slot.hash);
        await repo.putCached(slot.wid, slot.hash, record);
        await repo.putExpiry(record.expiresAtMs, slot.wid, slot.hash);
        // The oldest entry alone first: while it is live (the usual case) nothing has expired, and
        // reading (and validating at commit) PRUNE_PER_WRITE live entries on every write cost a
        // fifth of the gateway's CPU on a stream of misses.
        const [oldest] = await repo.firstExpiries(1);
        if (oldest === undefined || oldest[0] > now) return;
        for (const [at, wid, hash] of await repo.firstExpiries(PRUNE_PER_WRITE)) {
          if (at > now) break;
          await repo.removeExpiry(at, wid, hash);
          if ((await repo.cached(wid, hash))?.expiresAtMs === at) await repo.removeCached(wid, hash);
        }
      })
      .catch((err: unknown) => log.error({ err }, 'a model answer could not be cached; it will be asked again'))
      .finally(() => pending.delete(done));
    pending.add(done);
  };

  return {
    async lookup(slot) {
      const entry = await repo.cached(slot.wid, slot.hash);
      return entry && entry.expiresAtMs > clock.now() ? entry : undefined;
    },

    keepJson(slot, entry) {
      if (Buffer.byteLength(JSON.stringify(entry.json)) > maxBytes) return;
      put(slot, { ...entry, sse: null });
    },

    teeStream(slot, source, ended, served) {
      const chunks: Buffer[] = [];
      let size = 0;
      const out = new Transform({
        transform(chunk: Buffer | string, _enc, done) {
          const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
          size += b.length;
          if (size <= maxBytes) chunks.push(b);
          else chunks.length = 0;
          done(null, b);
        },
      });
      pipeline(source, out, (err) => {
        if (err || size > maxBytes) return;
        void ended.then((e) => {
          if (!e.ok) return;
          put(slot, {
            ...served,
            json: null,
            sse: Buffer.concat(chunks).toString('utf8'),
            inputTokens: e.inputTokens,
            outputTokens: e.outputTokens,
          });
        });
      });
      return out;
    },

    async flush() {
      await Promise.all([...pending]);
    },
  };
}
