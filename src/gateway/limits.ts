import { AppError } from '../errors/app-error.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/log.js';
import type { PolicyProfile, RateLimits, ScopeLimits } from '../settings/schema.js';
import type { Store } from '../store/index.js';
import type { RateWindowRecord } from './records.js';
import type { KeyRecord } from '../keys/records.js';
import { gatewayRepo } from './repo.js';
import { createWriteBehind } from './write-behind.js';

/**
 * Requests and tokens per minute on model traffic (docs/gateway.md "Rate limits"; issue 19 item 5).
 * Rules:
 * - A limit binds a scope: the key (its `limits`), its team and its principal (`gateway.limits`
 *   in settings) and its policy profile (the profile's `limits`). Teams, principals and profiles
 *   are counted per workspace: team "search" of one workspace never uses another's minute.
 * - Windows are fixed UTC minutes, one counter per scope and minute: `rateWindows`
 *   [wid, kind, id, minute start ms] -> { requests, tokens }.
 * - A request is refused (429 rate_limited, retry-after until the minute ends) when a scope has
 *   already used its requests, or its tokens, this minute. Otherwise it counts one request and its
 *   estimated tokens (the prompt's tokens, as budgets count them, plus its max tokens). The check
 *   and the count are one write function: the windows are read, checked and written in one
 *   transaction, so racing requests (of this process or another sharing the store) conflict and
 *   one retries, and a limit is never passed by both. The request that crosses the token limit is
 *   let through, so a minute overruns by at most one request's tokens, like budgets.
 * - When the call ends (its record is made) the estimate is replaced by the tokens the vendor
 *   reported (none for a refusal, a failure or a cache hit). These corrections are written behind,
 *   like call records: the deltas of `flushMs` (50 ms) are added, in one transaction, to what the
 *   store holds (read and written inside the transaction), and at shutdown. Reading a scope's use
 *   is the stored count plus the corrections this process has not written yet. A crash forgets at
 *   most the last `flushMs` of corrections (the counts themselves are written before the request
 *   goes on). A correction being written is counted once: each flush bumps the window's `version`
 *   (a count leaves it as it is), and a correction in flight is added to the stored count only
 *   until the store shows the version its flush made.
 * - A dry run is checked (it says what a real call would meet) but not counted: a read, no write.
 * - No maintained limiter fits: rate-limiter-flexible and its peers keep their counters in Redis,
 *   a SQL database or memory; the gateway's state lives in the store (LMDB, or PostgreSQL). A
 *   fixed window is one store read per scope.
 */
export type LimitScopeKind = 'key' | 'team' | 'principal' | 'profile';

export interface LimitScope {
  kind: LimitScopeKind;
  id: string;
  limits: RateLimits;
}

/** A counted request's tokens: replaced by what the call used (once; later calls do nothing; written behind). */
export interface LimitHold {
  settle(tokens: number): void;
}

export interface LimitCheck {
  /** The x-ratelimit-* headers of the most constraining scopes (empty when no limit applies). */
  headers: Record<string, string>;
  hold: LimitHold | null;
}

const MINUTE = 60_000;

/** Go-style durations, as OpenAI's x-ratelimit-reset-* headers give them: 340ms, 12s, 1m0s. */
export function resetIn(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const s = Math.ceil(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${s % 60}s`;
}

export const scopeName = (s: Pick<LimitScope, 'kind' | 'id'>): string => `${s.kind}:${s.id}`;

interface Batch {
  deltas: Array<[string, RateWindowRecord]>;
  nowMs: number;
}

/** One request's rate-limit check: its scopes now, and whether it counts (a dry run does not). */
export interface LimitInput {
  wid: string;
  scopes: readonly LimitScope[];
  nowMs: number;
  /** The request's estimated tokens (the prompt's, plus its max tokens). */
  tokens: number;
  count: boolean;
}

/**
 * Requests and tokens per minute on model traffic (the rules above). Reads and writes
 * `rateWindows`; the corrections to what a call used are written behind.
 */
export interface Limits {
  /** The scopes whose limits bind this key's traffic: the key's, its team's, its principal's, its profile's. */
  scopesOf(key: KeyRecord, profile: PolicyProfile | null): LimitScope[];
  /**
   * Refuses (429 rate_limited) when a scope has used its minute; else counts the request and its
   * estimated tokens (unless `count` is false: a dry run) and gives the headers and the hold.
   */
  check(input: LimitInput): Promise<LimitCheck>;
  /** Resolves once every count made before the call is written (or its write failed). */
  flush(): Promise<void>;
}

export interface LimitsDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  settings: { limits: readonly ScopeLimits[] };
  flushMs?: number;
  /** The store writes go through (tests stall or fail it); the store's own by default. */
  write?: Store['write'];
}

export function createLimits(deps: LimitsDeps): Limits {
  const { store } = deps;
  const repo = gatewayRepo(store);
  const byScope = new Map(deps.settings.limits.map((l) => [`${l.scope.kind}\u0000${l.scope.id}`, l]));
  // Deltas this process has not written yet, and those being written, by slot.
  let pending = new Map<string, RateWindowRecord>();
  let writing = new Map<string, RateWindowRecord>();
  // The version each slot's write in flight made, once its transaction ran.
  let versions = new Map<string, number>();
  const slotOf = (wid: string, s: LimitScope, minute: number) => `${wid}\u0000${s.kind}\u0000${s.id}\u0000${minute}`;
  const keyOf = (slot: string) => {
    const [wid, kind, id, minute] = slot.split('\u0000') as [string, string, string, string];
    return [wid, kind, id, Number(minute)];
  };
  // The stored window's count with this process's corrections not yet in it.
  const used = async (slot: string): Promise<{ use: RateWindowRecord; stored: RateWindowRecord | undefined }> => {
    const stored = await repo.rateWindow(keyOf(slot));
    const v = versions.get(slot);
    // Once the store shows the version of this process's write in flight, that count is in it.
    const a = v !== undefined && (stored?.version ?? 0) >= v ? undefined : writing.get(slot);
    const b = pending.get(slot);
    const use = {
      requests: (stored?.requests ?? 0) + (a?.requests ?? 0) + (b?.requests ?? 0),
      tokens: (stored?.tokens ?? 0) + (a?.tokens ?? 0) + (b?.tokens ?? 0),
      version: 0,
    };
    return { use, stored };
  };
  const add = (slot: string, requests: number, tokens: number) => {
    const d = pending.get(slot) ?? { requests: 0, tokens: 0, version: 0 };
    d.requests += requests;
    d.tokens += tokens;
    pending.set(slot, d);
    behind.queued(pending.size);
  };

  const behind = createWriteBehind<Batch>({
    store: { write: deps.write ?? ((fn) => store.write(fn)) },
    log: deps.log,
    what: 'model rate limit counts',
    flushMs: deps.flushMs ?? 50,
    batch: 512,
    take() {
      if (pending.size === 0) return null;
      writing = pending;
      pending = new Map();
      return { deltas: [...writing], nowMs: deps.clock.now() };
    },
    async write({ deltas, nowMs }) {
      const scopes = new Set<string>();
      for (const [slot, d] of deltas) {
        const key = keyOf(slot);
        const cur = await repo.rateWindow(key);
        const version = (cur?.version ?? 0) + 1;
        await repo.putRateWindow(key, {
          requests: Math.max(0, (cur?.requests ?? 0) + d.requests),
          tokens: Math.max(0, (cur?.tokens ?? 0) + d.tokens),
          version,
        });
        versions.set(slot, version);
        scopes.add(JSON.stringify(key.slice(0, 3)));
      }
      // A scope's past minutes are of no use: removed as it is written, so the table stays small.
      const before = Math.floor(nowMs / MINUTE) * MINUTE - MINUTE;
      for (const s of scopes) {
        for (const key of await repo.rateWindowKeys(JSON.parse(s) as string[])) {
          if (Number(key[3]) < before) await repo.removeRateWindow(key);
        }
      }
    },
    written() {
      writing = new Map();
      versions = new Map();
    },
    failed({ deltas }) {
      writing = new Map();
      versions = new Map();
      for (const [slot, d] of deltas) {
        const p = pending.get(slot) ?? { requests: 0, tokens: 0, version: 0 };
        pending.set(slot, { requests: p.requests + d.requests, tokens: p.tokens + d.tokens, version: 0 });
      }
    },
  });

  return {
    scopesOf(key, profile) {
      const out: LimitScope[] = [];
      const push = (kind: LimitScopeKind, id: string | null | undefined, limits: RateLimits | null | undefined) => {
        if (id && limits && (limits.requestsPerMinute !== undefined || limits.tokensPerMinute !== undefined))
          out.push({ kind, id, limits });
      };
      push('key', key.id, key.limits);
      if (key.team) push('team', key.team, byScope.get(`team\u0000${key.team}`));
      if (key.principal) push('principal', key.principal, byScope.get(`principal\u0000${key.principal}`));
      push('profile', profile?.id, profile?.limits);
      return out;
    },

    async check(input) {
      const { wid, scopes, nowMs, tokens } = input;
      if (scopes.length === 0) return { headers: {}, hold: null };
      const minute = Math.floor(nowMs / MINUTE) * MINUTE;
      const resetMs = minute + MINUTE - nowMs;
      // Read, checked and (unless a dry run) counted in one write function: racing requests conflict.
      const judge = async () => {
        const seen = await Promise.all(
          scopes.map(async (s) => {
            const slot = slotOf(wid, s, minute);
            return { s, slot, ...(await used(slot)) };
          }),
        );
        const over = seen.find(({ s, use }) => overOf(s, use) !== null);
        if (!over && input.count) {
          for (const { slot, stored } of seen)
            await repo.putRateWindow(keyOf(slot), {
              requests: (stored?.requests ?? 0) + 1,
              tokens: (stored?.tokens ?? 0) + tokens,
              // A count leaves the version as it is: it marks only flushes of corrections (above).
              version: stored?.version ?? 0,
            });
        }
        return { seen, over };
      };
      const { seen, over } = input.count ? await store.write(judge) : await judge();
      if (over) {
        const { s, use } = over;
        const which = overOf(s, use)!;
        const limit = which === 'requests' ? s.limits.requestsPerMinute! : s.limits.tokensPerMinute!;
        throw new AppError('rate_limited', {
          message: `The ${which} per minute of ${scopeName(s)} (${limit}) are used until ${new Date(minute + MINUTE).toISOString()}; nothing was sent.`,
          fix: `Wait the seconds in retry-after, then retry; or ask an admin to raise the limits of ${scopeName(s)}.`,
          headers: {
            'retry-after': String(Math.max(1, Math.ceil(resetMs / 1000))),
            'x-svc-ratelimit-scope': scopeName(s),
            ...headersOf(seen, 0, 0, resetMs),
          },
          details: {
            scope: { kind: s.kind, id: s.id },
            limit: which === 'requests' ? 'requestsPerMinute' : 'tokensPerMinute',
            limitValue: limit,
            used: which === 'requests' ? use.requests : use.tokens,
          },
        });
      }
      if (!input.count) return { headers: headersOf(seen, 0, 0, resetMs), hold: null };
      let open = true;
      return {
        headers: headersOf(seen, 1, tokens, resetMs),
        hold: {
          settle(actual) {
            if (!open) return;
            open = false;
            if (actual !== tokens) for (const { slot } of seen) add(slot, 0, actual - tokens);
          },
        },
      };
    },

    flush: () => behind.flush(),
  };
}

/** Which of the scope's limits this minute's use has reached, if any. */
function overOf(s: LimitScope, use: RateWindowRecord): 'requests' | 'tokens' | null {
  const rpm = s.limits.requestsPerMinute;
  const tpm = s.limits.tokensPerMinute;
  if (rpm !== undefined && use.requests >= rpm) return 'requests';
  if (tpm !== undefined && use.tokens >= tpm) return 'tokens';
  return null;
}

/** OpenAI's headers, from the scope with the fewest requests (and tokens) left after this request. */
function headersOf(
  seen: ReadonlyArray<{ s: LimitScope; use: RateWindowRecord }>,
  requests: number,
  tokens: number,
  resetMs: number,
): Record<string, string> {
  const out: Record<string, string> = {};
  let r: { limit: number; left: number } | null = null;
  let k: { limit: number; left: number } | null = null;
  for (const { s, use } of seen) {
    const rpm = s.limits.requestsPerMinute;
    const tpm = s.limits.tokensPerMinute;
    if (rpm !== undefined) {
      const left = Math.max(0, rpm - use.requests - requests);
      if (!r || left < r.left) r = { limit: rpm, left };
    }
    if (tpm !== undefined) {
      const left = Math.max(0, tpm - use.tokens - tokens);
      if (!k || left < k.left) k = { limit: tpm, left };
    }
  }
  if (r) {
    out['x-ratelimit-limit-requests'] = String(r.limit);
    out['x-ratelimit-remaining-requests'] = String(r.left);
    out['x-ratelimit-reset-requests'] = resetIn(resetMs);
  }
  if (k) {
    out['x-ratelimit-limit-tokens'] = String(k.limit);
    out['x-ratelimit-remaining-tokens'] = String(k.left);
    out['x-ratelimit-reset-tokens'] = resetIn(resetMs);
  }
  return out;
}
