import type { Readable } from 'node:stream';
import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { createUpstream, type Upstream } from '../lib/upstream.js';
import { readStanding } from '../killswitch/standing.js';
import type { GatewayModel, GatewaySettings, PolicyProfile } from '../settings/schema.js';
import type { CallRecord, KeyRecord, Store } from '../store/index.js';
import { createModelHealth } from './breaker.js';
import type { Ledger } from '../ledger/service.js';
import type { Budgets, Reservation } from './budgets.js';
import type { CallLog } from './calls.js';
import { attempt, type Shape } from './forward.js';
import { eligibleModels, profileBlockers } from './routing.js';
import { promptText, screen } from './screen.js';
import { checkOversight, classify, readSteering } from './steering.js';
import { DEFAULT_MAX_TOKENS } from './translate/requests.js';
import type { Usage } from './translate/responses.js';

/**
 * The model gateway (SPEC.md 1.5, 4.2, 7.4, 7.6; API.md 6). One request, in order:
 * 1. Standing: an agent key's stopped agent, or "stop every agent" for a key bound to no agent,
 *    is 403 agent_stopped; nothing is sent.
 * 2. The plan: its people limit past the grace period (402 seat_limit_reached), and its monthly
 *    request allowance (429 plan_limit_reached).
 *    Enforcement and data-loss mode: the key's policy profile, else the workspace's own setting
 *    (console), else the deployment's.
 * 3. Steering headers; the task class (header, else the key's default; else 400
 *    unclassified_request when enforcing, or the classifier's guess in shadow); high-risk
 *    classes need acknowledged human oversight.
 * 4. Routing: the eligible models for the class, the key's policy profile and the objective
 *    (enforce: 409 policy_conflict with relaxations when none; shadow: the requested model
 *    serves, and the routing choice is only reported).
 * 5. Data-loss screening of the prompt (block or redact).
 * 6. Budgets: the ladder's step (block, approval, downgrade, nudge) and a reservation.
 * 7. Dry run: answered here, nothing sent. Otherwise the models in order, failing over on
 *    failures until one answers (502 upstream_failure with attemptedModels when none does);
 *    a stream is never failed over once its first byte went out.
 * 8. The call's cost from the vendor's usage settles the reservation; the call record is queued.
 */
type Json = Record<string, unknown>;

export interface GatewayRequest {
  shape: Shape;
  body: Json;
  key: KeyRecord;
  headers: Record<string, string | string[] | undefined>;
  traceparent: string;
  signal: AbortSignal;
  startedAt: number;
  /** Filled as soon as each is known, so that a refusal carries them too. */
  answerHeaders?: Record<string, string>;
}

export interface GatewayAnswer {
  status: number;
  headers: Record<string, string>;
  json?: Json;
  stream?: Readable;
}

const costOf = (m: GatewayModel, u: Usage | null): number =>
  u ? Math.ceil((u.input * m.priceMicrosPerMTokIn + u.output * m.priceMicrosPerMTokOut) / 1_000_000) : 0;

const estimateOf = (m: GatewayModel, promptChars: number, maxTokens: number): number =>
  Math.ceil((Math.ceil(promptChars / 4) * m.priceMicrosPerMTokIn + maxTokens * m.priceMicrosPerMTokOut) / 1_000_000);

const priceOf = (m: GatewayModel) => m.priceMicrosPerMTokIn + m.priceMicrosPerMTokOut;

/** Emits an outbound event that is not a ledger record, once per key (webhooks/service.ts `advise`). */
export type Advise = (wid: string, type: 'budget.advisory', onceKey: string, data: Record<string, unknown>) => void;

export function createGateway(deps: {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  settings: GatewaySettings;
  monthlyRequests: (wid: string) => number | null;
  seats: { people: (wid: string) => number | null; graceDays: number };
  calls: CallLog;
  budgets: Budgets;
  advise?: Advise;
}) {
  const { store, clock, ids, settings, calls, budgets } = deps;
  const providers = new Map(settings.providers.map((p) => [p.id, p]));
  const upstreams = new Map<string, Upstream>();
  const upstreamOf = (providerId: string): Upstream => {
    let u = upstreams.get(providerId);
    if (!u) {
      const p = providers.get(providerId)!;
      u = createUpstream(p.baseUrl, {
        connections: p.connections,
        connectTimeoutMs: settings.connectTimeoutMs,
        headersTimeoutMs: settings.headersTimeoutMs,
        bodyTimeoutMs: settings.bodyTimeoutMs,
      });
      upstreams.set(providerId, u);
    }
    return u;
  };
  const health = createModelHealth({ ...settings.breaker, now: () => clock.now() });
  const profiles = new Map(settings.policyProfiles.map((p) => [p.id, p]));
  const catalogue = new Map(settings.models.map((m) => [m.id, m]));

  const refuseIfStopped = (key: KeyRecord): void => {
    if (key.agentId) {
      const standing = readStanding(store, key.workspaceId, key.agentId);
      if (standing.stopped) {
        throw new AppError('agent_stopped', {
          message: `Agent ${key.agentId} is stopped (${standing.reason}); nothing was sent.`,
          details: { hold: standing.hold, stopped: standing.stoppedBy, agentId: key.agentId },
        });
      }
      return;
    }
    const stopAll = store.tables.stopAll.get(key.workspaceId);
    if (stopAll) {
      throw new AppError('agent_stopped', {
        message: `Every agent of this workspace is stopped (${stopAll.reason}), and this key is bound to no one agent; nothing was sent.`,
        details: { hold: 'workspace', stopped: 'workspace', agentId: null },
      });
    }
  };

  /**
   * The free plan's people limit: a workspace past it keeps its model traffic for the grace
   * period, counted from when it was first seen past it; then 402 seat_limit_reached. Back within
   * the limit, the count starts afresh. The mark is written beside the answer, not before it.
   */
  const checkSeats = (wid: string, nowMs: number): void => {
    const people = deps.seats.people(wid);
    if (people === null) {
      if (store.tables.seatOverage.has(wid))
        void store.write(() => store.tables.seatOverage.remove(wid)).catch(() => {});
      return;
    }
    const over = store.tables.members.scan([wid]).length > people;
    const since = store.tables.seatOverage.get(wid);
    if (!over) {
      if (since) void store.write(() => store.tables.seatOverage.remove(wid)).catch(() => {});
      return;
    }
    if (!since) {
      void store
        .write(() => {
          if (!store.tables.seatOverage.has(wid)) store.tables.seatOverage.put(wid, isoAt(nowMs));
        })
        .catch(() => {});
      return;
    }
    const ends = Date.parse(since) + deps.seats.graceDays * 86_400_000;
    if (nowMs >= ends) {
      throw new AppError('seat_limit_reached', {
        message: `The plan allows ${people} people in a workspace; this one has had more since ${since}, and the grace period ended ${isoAt(ends)}.`,
      });
    }
  };

  return {
    health,

    /**
     * The gateway's enforcement point alone, for drills: whether a model call with a key of this
     * agent would be let past the standing check (the first step of every call), without a call.
     */
    admitsAgent(wid: string, agentId: string): { admitted: true } | { admitted: false; type: string } {
      try {
        refuseIfStopped({ workspaceId: wid, agentId } as KeyRecord);
        return { admitted: true };
      } catch (err) {
        return { admitted: false, type: (err as AppError).type };
      }
    },

    async handle(req: GatewayRequest): Promise<GatewayAnswer> {
      const { key, body } = req;
      const wid = key.workspaceId;
      const nowMs = clock.now();
      const at = isoAt(nowMs);
      const headers: Record<string, string> = req.answerHeaders ?? {};
      const callId = ids.id('call');
      headers['x-svc-call-id'] = callId;
      refuseIfStopped(key);
      checkSeats(wid, nowMs);
      const monthlyRequests = deps.monthlyRequests(wid);
      if (monthlyRequests !== null && calls.requestsThisMonth(wid, at) >= monthlyRequests) {
        throw new AppError('plan_limit_reached', {
          variant: 'monthlyRequests',
          message: `The plan allows ${monthlyRequests} model requests a month, and this month's are used.`,
          fix: 'Wait for next month, or raise plan.monthlyRequests in the configuration.',
          headers: {
            'retry-after': String(
              Math.ceil(
                (Date.UTC(new Date(nowMs).getUTCFullYear(), new Date(nowMs).getUTCMonth() + 1, 1) - nowMs) / 1000,
              ),
            ),
          },
        });
      }
      const steering = readSteering(req.headers);
      const taskId = steering.taskId ?? ids.id('task');
      const sessionId = steering.clientSession ?? `ses_${ids.id('req').slice(4)}`;
      headers['x-svc-task-id'] = taskId;
      headers['x-svc-session'] = sessionId;
      if (steering.taskId && !calls.taskKnown(wid, steering.taskId)) {
        throw new AppError('invalid_request', {
          message: `No task ${steering.taskId} in this workspace.`,
          details: {
            errors: [
              { field: 'x-svc-task-id', message: 'names no task of this workspace; omit it to start a new task' },
            ],
          },
        });
      }
      const profile: PolicyProfile | null = key.policyProfile ? (profiles.get(key.policyProfile) ?? null) : null;
      if (key.policyProfile && !profile) {
        throw new AppError('policy_conflict', {
          message: `The key's policy profile ${key.policyProfile} is not configured, so no model is admitted.`,
          details: { relaxations: [] },
        });
      }
      const own = store.tables.workspaceGateway.get(wid);
      const enforcement = profile?.enforcement ?? own?.enforcement ?? settings.enforcement;
      // The prompt's text is read once: for the classifier and for the budget estimate.
      let prompt: string | null = null;
      const promptOf = () => (prompt ??= promptText(body));
      let taskClass = steering.taskClass ?? key.defaultTaskClass;
      if (!taskClass) {
        if (enforcement === 'enforce') throw new AppError('unclassified_request');
        taskClass = classify(promptOf(), settings.classifier.rules, settings.classifier.fallback);
      }
      checkOversight(taskClass, settings.highRiskTaskClasses, steering.oversight);

      const requested = typeof body.model === 'string' ? body.model : null;
      const routed = eligibleModels({
        models: settings.models,
        taskClass,
        objective: steering.objective,
        profile,
        home: settings.home,
        requested,
        observedLatencyMs: (id) => health.latencyMs(id),
      });
      let candidates: GatewayModel[];
      if (enforcement === 'enforce') {
        if (routed.models.length === 0)
          throw new AppError('policy_conflict', {
            message: `No configured model may serve task class ${taskClass} under this key's policy.`,
            details: { taskClass, relaxations: routed.relaxations },
          });
        candidates = routed.models;
      } else {
        const asked = requested ? catalogue.get(requested) : undefined;
        if (!asked) {
          throw new AppError('invalid_request', {
            message: `Model ${requested ?? '(none)'} is not in this deployment's catalogue.`,
            fix: 'Name a model that GET /v1/models lists.',
            details: { errors: [{ field: 'model', message: 'names no model of the catalogue' }] },
          });
        }
        // Shadow mode observes routing, not the key's policy: a profile's models, providers and
        // jurisdictions still bind.
        const relax = profileBlockers(asked, profile, settings.home);
        if (relax.length > 0) {
          throw new AppError('policy_conflict', {
            message: `The key's policy profile ${profile!.id} does not admit ${asked.id}.`,
            details: {
              taskClass,
              relaxations: [
                {
                  model: asked.id,
                  provider: asked.provider,
                  jurisdiction: asked.jurisdiction,
                  priceMicrosPerMTokIn: asked.priceMicrosPerMTokIn,
                  priceMicrosPerMTokOut: asked.priceMicrosPerMTokOut,
                  relax,
                  signOff: profile!.signOff,
                },
              ],
            },
          });
        }
        candidates = [asked];
      }

      const redacted = screen(body, own?.dataLoss ?? settings.dataLoss);
      const admission = budgets.admit(key);
      if (admission.step === 'downgrade' && enforcement === 'enforce')
        candidates = [...candidates].sort((a, b) => priceOf(a) - priceOf(b));

      const stream = body.stream === true;
      const maxTokens = Number(body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS);
      const promptChars = promptOf().length;
      headers['x-svc-enforcement'] =
        enforcement === 'shadow'
          ? 'shadow'
          : admission.step === 'downgrade'
            ? 'downgrade'
            : admission.step === 'nudge'
              ? 'nudge'
              : 'observe';
      if (enforcement === 'shadow') headers['x-svc-would-route-to'] = routed.models[0]?.id ?? 'none';
      const advisory = budgets.advisory(admission);
      if (advisory) {
        headers['x-svc-advisory'] = advisory;
        const b = admission.binding!;
        // One `budget.advisory` event per budget, period and step, not one per call.
        deps.advise?.(wid, 'budget.advisory', `${b.budget.id}/${b.periodStart}/${admission.step}`, {
          budgetId: b.budget.id,
          scope: budgets.scopeOf(b.budget),
          period: b.budget.period,
          periodStart: b.periodStart,
          step: admission.step,
          usedMicros: b.used,
          amountMicros: b.budget.amountMicros,
          message: advisory,
        });
      }
      if (admission.binding) headers['x-svc-budget-scope'] = budgets.scopeOf(admission.binding.budget);
      if (Object.keys(redacted).length > 0)
        headers['x-svc-redacted'] = Object.entries(redacted)
          .map(([k, n]) => `${k}=${n}`)
          .join(', ');

      calls.countRequest(wid, at);
      calls.openTask(wid, taskId, at);
      const record = (fields: Partial<CallRecord>): void =>
        calls.record({
          id: callId,
          workspaceId: wid,
          at,
          keyId: key.id,
          principal: key.principal,
          team: key.team,
          agentId: key.agentId,
          taskId,
          taskClass,
          sessionId,
          shape: req.shape,
          stream,
          dryRun: steering.dryRun,
          enforcement: headers['x-svc-enforcement']!,
          requestedModel: requested,
          model: null,
          provider: null,
          attemptedModels: [],
          inputTokens: 0,
          outputTokens: 0,
          costMicros: 0,
          latencyMs: Math.round(performance.now() - req.startedAt),
          overheadMicros: 0,
          outcome: 'ok',
          budgetId: admission.binding?.budget.id ?? null,
          ...fields,
        });
      const serveHeaders = (m: GatewayModel) => {
        headers[enforcement === 'shadow' ? 'x-svc-served-by' : 'x-svc-routed-to'] = m.id;
        headers['x-svc-jurisdiction'] = `${m.jurisdiction.domicile}; ${m.jurisdiction.region}`;
        if (admission.binding && requested && catalogue.get(requested)) {
          headers['x-svc-yield-multiplier'] = (priceOf(catalogue.get(requested)!) / Math.max(1, priceOf(m))).toFixed(2);
        }
      };

      if (steering.dryRun) {
        const first = candidates[0]!;
        serveHeaders(first);
        const estimate = estimateOf(first, promptChars, maxTokens);
        headers['x-svc-overhead-micros'] = String(Math.round((performance.now() - req.startedAt) * 1000));
        record({ model: first.id, provider: first.provider, outcome: 'dry_run' });
        return {
          status: 200,
          headers,
          json: {
            object: 'svc.dry_run',
            model: first.id,
            taskClass,
            enforcement: headers['x-svc-enforcement'],
            candidates: candidates.map((m) => m.id),
            estimatedCostMicros: estimate,
            budgetStep: admission.step,
          },
        };
      }

      const reservation: Reservation | null =
        admission.applicable.length > 0
          ? budgets.reserve(admission.applicable, estimateOf(candidates[0]!, promptChars, maxTokens))
          : null;
      const attempted: string[] = [];
      let upstreamMicros: number;
      try {
        for (const model of health.admit(candidates)) {
          if (attempted.length > 0 && reservation) {
            reservation.change(estimateOf(model, promptChars, maxTokens));
          }
          attempted.push(model.id);
          const provider = providers.get(model.provider)!;
          const clientModel = enforcement === 'shadow' ? requested! : model.id;
          const started = performance.now();
          const result = await attempt(
            upstreamOf(provider.id),
            {
              shape: req.shape,
              body,
              stream,
              model,
              provider,
              clientModel,
              traceparent: req.traceparent,
              anthropicVersion:
                typeof req.headers['anthropic-version'] === 'string' ? req.headers['anthropic-version'] : undefined,
              signal: req.signal,
              nowSeconds: Math.floor(nowMs / 1000),
            },
            callId.slice(5),
          );
          if (result.kind === 'failed') {
            if (req.signal.aborted) break;
            health.failure(model.id);
            continue;
          }
          if (result.kind === 'refused') {
            health.success(model.id, performance.now() - started);
            serveHeaders(model);
            reservation?.settle(0);
            record({ model: model.id, provider: provider.id, attemptedModels: attempted, outcome: 'upstream_error' });
            throw new AppError('invalid_request', {
              message: `${model.id} refused the request (HTTP ${result.status}): ${String(result.body.error?.message ?? result.body.message ?? 'no reason given')}`,
              fix: "Correct the request as the vendor's message says.",
              headers,
              details: { upstreamStatus: result.status },
            });
          }
          if (result.kind === 'json') {
            upstreamMicros = result.upstreamMs * 1000;
            health.success(model.id, result.upstreamMs);
            serveHeaders(model);
            const cost = costOf(model, result.usage);
            reservation?.settle(cost);
            headers['x-svc-cost-micros'] = String(cost);
            const overhead = Math.max(0, Math.round((performance.now() - req.startedAt) * 1000 - upstreamMicros));
            headers['x-svc-overhead-micros'] = String(overhead);
            record({
              model: model.id,
              provider: provider.id,
              attemptedModels: attempted,
              inputTokens: result.usage?.input ?? 0,
              outputTokens: result.usage?.output ?? 0,
              costMicros: cost,
              overheadMicros: overhead,
            });
            return { status: 200, headers, json: result.body };
          }
          health.success(model.id, result.upstreamFirstByteMs);
          serveHeaders(model);
          const overhead = Math.max(
            0,
            Math.round((performance.now() - req.startedAt - result.upstreamFirstByteMs) * 1000),
          );
          headers['x-svc-overhead-micros'] = String(overhead);
          void result.done.then(({ usage, outcome }) => {
            // A stream that did not finish (cut, or the client left) may never have reported its
            // usage: it is charged at least what was reserved for it, never nothing.
            const cost =
              outcome === 'ok'
                ? costOf(model, usage)
                : Math.max(costOf(model, usage), estimateOf(model, promptChars, maxTokens));
            reservation?.settle(cost);
            record({
              model: model.id,
              provider: provider.id,
              attemptedModels: attempted,
              inputTokens: usage?.input ?? 0,
              outputTokens: usage?.output ?? 0,
              costMicros: cost,
              overheadMicros: overhead,
              outcome,
              latencyMs: Math.round(performance.now() - req.startedAt),
            });
          });
          return { status: 200, headers, stream: result.stream };
        }
      } catch (err) {
        reservation?.settle(0);
        throw err;
      }
      reservation?.settle(0);
      record({ attemptedModels: attempted, outcome: req.signal.aborted ? 'cancelled' : 'upstream_failure' });
      throw new AppError('upstream_failure', {
        message:
          attempted.length > 0
            ? `Every eligible model failed: ${attempted.join(', ')}.`
            : 'Every eligible model is failing (their circuits are open); none was tried.',
        headers,
        details: { attemptedModels: attempted },
      });
    },

    /** The workspace's own settings (console), over the deployment's defaults. */
    settingsOf(wid: string) {
      const own = store.tables.workspaceGateway.get(wid);
      return {
        enforcement: own?.enforcement ?? settings.enforcement,
        dataLoss: own?.dataLoss ?? settings.dataLoss,
        updatedAt: own?.updatedAt ?? null,
        updatedBy: own?.updatedBy ?? null,
      };
    },

    async configure(
      wid: string,
      change: { enforcement?: 'enforce' | 'shadow'; dataLoss?: 'off' | 'redact' | 'block' },
      actor: string,
    ) {
      await store.write(() => {
        const current = store.tables.workspaceGateway.get(wid);
        store.tables.workspaceGateway.put(wid, {
          ...current,
          ...change,
          updatedAt: isoAt(clock.now()),
          updatedBy: actor,
        });
        deps.ledger.record({
          workspaceId: wid,
          actor,
          kind: 'gateway.settings_updated',
          subject: wid,
          data: { ...change },
        });
      });
      return this.settingsOf(wid);
    },

    async close(): Promise<void> {
      await Promise.all([...upstreams.values()].map((u) => u.close()));
      await calls.flush();
    },
  };
}

export type Gateway = ReturnType<typeof createGateway>;
