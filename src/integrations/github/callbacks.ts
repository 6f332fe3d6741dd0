import type { Dispatcher } from 'undici';
import type { Ledger } from '../../ledger/service.js';
import { isoAt, type Clock } from '../../lib/clock.js';
import type { IdSource } from '../../lib/ids.js';
import type { Logger } from '../../lib/log.js';
import { periodic } from '../../lib/schedule.js';
import { safeDispatcher } from '../../lib/safe-target.js';
import type { Store } from '../../store/index.js';
import type { GithubCallbackRecord } from '../records.js';
import type { IntegrationRegistry } from '../registry.js';
import { integrationsRepo } from '../repo.js';
import { DEFAULT_API_URL, underApi } from './api-url.js';
import { recordReport, sendReport } from './report-try.js';

export { DEFAULT_API_URL, underApi } from './api-url.js';

/** Beyond a try's own bound (two timeouts: its target check and its post): a crashed try is sent again this soon after. */
const CLAIM_MARGIN_MS = 5_000;

/**
 * Reporting deployment protection decisions to GitHub (its `deployment_callback_url`).
 * Rules:
 * - A decision to report (allow → `approved`, deny → `rejected`) is written by the caller in the
 *   same write as the decision's ledger record (`enqueueInWrite`): if the decision is stored, so is
 *   its report, and a crash loses none.
 * - It is reported only to a URL under the workspace's `apiUrl` (same origin, path under its
 *   path; default https://api.github.com) and only with a `token` configured; otherwise nothing is
 *   queued and `github.deployment_report_refused` says why.
 * - The dispatcher sends what is due every `dispatchIntervalMs`: `POST <url>` with
 *   `{ environment_name, state, comment }`, `Authorization: Bearer <token>`, `Accept:
 *   application/vnd.github+json`, via undici through lib/safe-target.ts (https unless private
 *   targets are allowed; addresses vetted at connect; no redirects followed, so the token goes
 *   nowhere else). A 2xx is `github.deployment_reported`. A timeout, a refused connection, a 5xx,
 *   408 or 429 is tried again after backoffBaseMs × 2^(tries-1) (capped, ±20% jitter) until
 *   giveUpAfterMs; then, or at once for any other status (the token is wrong, the run is gone, it
 *   was decided already), `github.deployment_report_failed`.
 * - Settings are read again at each try: a token removed or an apiUrl changed meanwhile stops it.
 * - A try is claimed first, in one write that reads the report, checks it is due and moves its
 *   next try past the longest a try can take (`claimMs`): of several instances (or passes), one
 *   sends it. A process that dies during a try leaves it to be tried again once that has passed.
 */
const BATCH = 20;

export interface CallbackSettings {
  allowPrivateTargets: boolean;
  timeoutMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  giveUpAfterMs: number;
  dispatchIntervalMs: number;
}

/** A deployment protection decision to report, as the decision's write queues it. */
export interface GithubReport {
  delivery: string;
  /** The delivery's `deployment_callback_url` as sent (checked here: a string under the kind's apiUrl). */
  url: unknown;
  environment: string;
  state: 'approved' | 'rejected';
  comment: string;
  actionId: string | null;
}

/**
 * Reports of deployment protection decisions to GitHub (the rules above). Reads and writes the
 * `githubCallbacks` table, reads the github kind's settings and token, and records each report
 * sent, refused or given up on.
 */
export interface GithubCallbacks {
  /** Inside the decision's write: queues its report, or records why it is not sent. */
  enqueueInWrite(wid: string, report: GithubReport): Promise<void>;
  /** Sends what is due now (each report once at a time); resolves when those tries are written. */
  dispatch(): Promise<void>;
  /** Starts the dispatcher (the server does; commands that open the store do not). */
  start(): void;
  /** Stops the dispatcher, after the pass under way. */
  stop(): Promise<void>;
}

export interface GithubCallbacksDeps {
  store: Store;
  clock: Clock;
  ids: IdSource;
  ledger: Ledger;
  registry: IntegrationRegistry;
  log: Logger;
  settings: CallbackSettings;
  dispatcher?: Dispatcher;
}

export function createGithubCallbacks(deps: GithubCallbacksDeps): GithubCallbacks {
  const { store, clock, ids, ledger, registry, settings } = deps;
  const repo = integrationsRepo(store);
  /** How long a claimed try keeps others off: its target check and its post, each bounded by the timeout, and a margin. */
  const claimMs = 2 * settings.timeoutMs + CLAIM_MARGIN_MS;
  const dispatcher =
    deps.dispatcher ??
    safeDispatcher({ allowPrivateTargets: settings.allowPrivateTargets, connectTimeoutMs: settings.timeoutMs });
  const apiUrlOf = async (wid: string): Promise<string> =>
    String((await registry.configOf(wid, 'github'))?.apiUrl ?? DEFAULT_API_URL);

  /** Inside the decision's write: queues its report, or records why it is not sent. */
  const enqueueInWrite = async (wid: string, report: GithubReport): Promise<void> => {
    const apiUrl = await apiUrlOf(wid);
    const url = typeof report.url === 'string' ? report.url : '';
    const reason = !url
      ? 'the event has no deployment_callback_url'
      : !underApi(url, apiUrl)
        ? `the deployment_callback_url is not under the configured apiUrl ${apiUrl}`
        : !(await registry.hasConfigSecret(wid, 'github', 'token'))
          ? 'no GitHub token is configured'
          : null;
    if (reason) {
      await ledger.record({
        workspaceId: wid,
        actor: 'github',
        kind: 'github.deployment_report_refused',
        subject: report.delivery,
        data: { state: report.state, environment: report.environment, reason },
      });
      return;
    }
    const now = clock.now();
    const record: GithubCallbackRecord = {
      id: ids.id('dlv'),
      workspaceId: wid,
      delivery: report.delivery,
      url,
      environment: report.environment,
      state: report.state,
      comment: report.comment.slice(0, 1000),
      actionId: report.actionId,
      createdAt: isoAt(now),
      nextAttemptMs: now,
      attempts: [],
    };
    await repo.putGithubCallback(record);
  };

  /** Claims a report that is due for one try (see the rules above); null when it is not due or is gone. */
  const claim = (wid: string, id: string): Promise<GithubCallbackRecord | null> =>
    store.write(async () => {
      const current = await repo.githubCallback(wid, id);
      const now = clock.now();
      if (!current || current.nextAttemptMs > now) return null;
      await repo.putGithubCallback({ ...current, nextAttemptMs: now + claimMs });
      return current;
    });

  const tryDeps = { ...deps, repo, dispatcher, apiUrlOf };
  /** One try of one report: sent, then its outcome written. */
  const attempt = async (c: GithubCallbackRecord): Promise<void> => {
    const outcome = await sendReport(tryDeps, c);
    await recordReport(tryDeps, c, outcome);
  };

  const inFlight = new Set<string>();

  /** Sends what is due now (each report once at a time); returns when those tries are written. */
  const dispatch = async (): Promise<void> => {
    const now = clock.now();
    const due = (await repo.githubCallbacks())
      .filter((c) => c.nextAttemptMs <= now && !inFlight.has(c.id))
      .slice(0, BATCH);
    await Promise.all(
      due.map(async (c) => {
        inFlight.add(c.id);
        try {
          const claimed = await claim(c.workspaceId, c.id);
          if (claimed) await attempt(claimed);
        } catch (err) {
          deps.log.error({ err, callbackId: c.id }, 'github deployment report failed to be recorded');
        } finally {
          inFlight.delete(c.id);
        }
      }),
    );
  };

  const loop = periodic(dispatch, settings.dispatchIntervalMs, (err) =>
    deps.log.error({ err }, 'github report dispatch failed'),
  );
  return { enqueueInWrite, dispatch, start: loop.start, stop: loop.stop };
}
