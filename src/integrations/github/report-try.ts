import type { Dispatcher } from 'undici';
import type { Ledger } from '../../ledger/service.js';
import { isoAt, type Clock } from '../../lib/clock.js';
import { postOnce } from '../../lib/outbound.js';
import { retryDelay } from '../../lib/schedule.js';
import { targetProblem } from '../../lib/safe-target.js';
import type { Store } from '../../store/index.js';
import type { GithubCallbackRecord } from '../records.js';
import type { IntegrationRegistry } from '../registry.js';
import type { IntegrationsRepo } from '../repo.js';
import { underApi } from './api-url.js';
import type { CallbackSettings } from './callbacks.js';

/**
 * One try of a claimed report (callbacks.ts lists the rules), in two steps: send (the settings
 * read again, the target checked, one POST with the token), then write the outcome (reported,
 * tried again later, or failed: at once for a status GitHub will answer the same way again).
 */

export interface ReportTryDeps {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  registry: IntegrationRegistry;
  settings: CallbackSettings;
  repo: IntegrationsRepo;
  dispatcher: Dispatcher;
  apiUrlOf(wid: string): Promise<string>;
}

/** What a try came to: GitHub's status, the error, and why the report will not be tried again (`final`). */
export interface ReportOutcome {
  started: number;
  status: number | null;
  error: string | null;
  final: string | null;
  ok: boolean;
}

/** Sends one report with the settings of now: no token or an apiUrl moved away is final; a refused target is retried. */
export async function sendReport(deps: ReportTryDeps, c: GithubCallbackRecord): Promise<ReportOutcome> {
  const { clock, registry, settings } = deps;
  const started = clock.now();
  let status: number | null = null;
  let error: string | null = null;
  let final: string | null = null;
  const [token, apiUrl] = await Promise.all([
    registry.configSecret(c.workspaceId, 'github', 'token'),
    deps.apiUrlOf(c.workspaceId),
  ]);
  if (!token) final = 'no GitHub token is configured';
  else if (!underApi(c.url, apiUrl)) final = `the deployment_callback_url is not under the configured apiUrl ${apiUrl}`;
  else {
    const problem = await targetProblem(c.url, {
      allowPrivateTargets: settings.allowPrivateTargets,
      httpsOnly: true,
    });
    if (problem) {
      error = `refused: ${problem}`;
    } else {
      ({ status, error } = await postOnce(c.url, {
        dispatcher: deps.dispatcher,
        timeoutMs: settings.timeoutMs,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/vnd.github+json',
          'content-type': 'application/json',
          'user-agent': 'svc-github/1',
          'x-github-api-version': '2022-11-28',
        },
        body: JSON.stringify({ environment_name: c.environment, state: c.state, comment: c.comment }),
      }));
    }
  }
  const ok = status !== null && status >= 200 && status < 300;
  if (status !== null && !ok && status < 500 && status !== 408 && status !== 429) final = `GitHub answered ${status}`;
  return { started, status, error, final, ok };
}

/** Writes a try's outcome: reported, or given up (final, or past `giveUpAfterMs`), or its next try scheduled. */
export async function recordReport(deps: ReportTryDeps, c: GithubCallbackRecord, outcome: ReportOutcome) {
  const { store, clock, ledger, repo, settings } = deps;
  const { started, status, error, final, ok } = outcome;
  const now = clock.now();
  await store.write(async () => {
    const current = await repo.githubCallback(c.workspaceId, c.id);
    if (!current) return;
    const attempts = [...current.attempts, { at: isoAt(started), status, error: error ?? final }];
    const facts = {
      state: current.state,
      environment: current.environment,
      actionId: current.actionId,
      tries: attempts.length,
      status,
    };
    if (ok) {
      await repo.removeGithubCallback(c.workspaceId, c.id);
      await ledger.record({
        workspaceId: c.workspaceId,
        actor: 'github',
        kind: 'github.deployment_reported',
        subject: current.delivery,
        data: facts,
      });
      return;
    }
    const next = now + retryDelay(attempts.length, settings);
    if (final || next - Date.parse(current.createdAt) > settings.giveUpAfterMs) {
      await repo.removeGithubCallback(c.workspaceId, c.id);
      await ledger.record({
        workspaceId: c.workspaceId,
        actor: 'github',
        kind: 'github.deployment_report_failed',
        subject: current.delivery,
        data: { ...facts, reason: final ?? error ?? 'gave up' },
      });
      return;
    }
    await repo.putGithubCallback({ ...current, attempts, nextAttemptMs: next });
  });
}
