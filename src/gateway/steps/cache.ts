import { Readable } from 'node:stream';
import { invalidField } from '../../errors/app-error.js';
import { cacheKeyOf } from '../cache.js';
import { overheadMicros, recordCall, serveHeaders } from './call-record.js';
import type { AfterStep, AsyncStep } from './context.js';

/**
 * Response cache (cache.ts), on for a key whose policy profile has `cache: { ttlSeconds }`:
 * never for a dry run or a request with `x-svc-cache: bypass`. A hit is answered here (nothing
 * sent, nothing reserved, a call of zero cost; a streamed request replays its stream) with
 * `x-svc-cache: hit`; a miss goes on with `x-svc-cache: miss`, and its answer is kept once it
 * ended well (`cacheWrite`, the after-step of the table: steps/index.ts).
 */
export const cache: AsyncStep = {
  name: 'cache',
  async run(ctx, env) {
    const raw = ctx.req.headers['x-svc-cache'];
    const asked = Array.isArray(raw) ? raw.join(',') : raw;
    if (asked !== undefined && asked.trim().toLowerCase() !== 'bypass')
      throw invalidField('x-svc-cache', 'x-svc-cache must be bypass when sent (it skips the response cache)');
    const ttlSeconds = ctx.profile?.cache?.ttlSeconds;
    const first = ctx.candidates[0];
    if (!ttlSeconds || !first || ctx.steering.dryRun || asked !== undefined) return;
    const hash = cacheKeyOf({ shape: ctx.req.shape, model: first.id, body: ctx.body });
    if (!hash) return;
    const slot = { wid: ctx.wid, hash, ttlSeconds };
    const entry = await env.cache.lookup(slot);
    if (!entry) {
      ctx.cacheSlot = slot;
      ctx.cacheState = 'miss';
      ctx.headers['x-svc-cache'] = 'miss';
      return;
    }
    ctx.cacheState = 'hit';
    // Nothing is sent: the runner releases the admission's reservation (steps/index.ts `release`).
    const { headers } = ctx;
    headers['x-svc-cache'] = 'hit';
    const model = env.catalogue.get(entry.model);
    if (model) serveHeaders(ctx, env, model);
    headers['x-svc-cost-micros'] = '0';
    headers['x-svc-overhead-micros'] = String(overheadMicros(ctx));
    recordCall(ctx, env, { model: entry.model, provider: entry.provider, attemptedModels: [] });
    return entry.sse !== null
      ? { status: 200, headers, stream: Readable.from([Buffer.from(entry.sse, 'utf8')], { objectMode: false }) }
      : { status: 200, headers, json: entry.json ?? {} };
  },
};

/** After the answer: a missed request's answer, once it ended well, is kept for the next. */
export const cacheWrite: AfterStep = {
  name: 'cache-write',
  after(ctx, env, answer) {
    const slot = ctx.cacheSlot;
    if (!slot || ctx.outcome.kind !== 'answered' || answer.status !== 200) return answer;
    const { model, result } = ctx.outcome;
    const served = { model: model.id, provider: model.provider };
    if (result.kind === 'json' && answer.json) {
      env.cache.keepJson(slot, {
        ...served,
        json: answer.json,
        inputTokens: result.usage?.input ?? 0,
        outputTokens: result.usage?.output ?? 0,
      });
    } else if (result.kind === 'stream' && answer.stream) {
      const ended = result.done.then((d) => ({
        ok: d.outcome === 'ok',
        inputTokens: d.usage?.input ?? 0,
        outputTokens: d.usage?.output ?? 0,
      }));
      return { ...answer, stream: env.cache.teeStream(slot, answer.stream, ended, served) };
    }
    return answer;
  },
};
