import { AppError } from '../../errors/app-error.js';
import type { Gate } from '../../gate/service.js';
import type { Ledger } from '../../ledger/service.js';
import { isoAt, type Clock } from '../../lib/clock.js';
import type { Store } from '../../store/index.js';
import type { GithubBotRecord } from '../records.js';
import { integrationsRepo } from '../repo.js';
import type { GithubCallbacks } from './callbacks.js';
import { decideProtection } from './protection.js';

export { deployTarget, label } from './protection.js';

/**
 * The code host (GitHub, issue 8, docs/integrations.md); its secret is in registry.ts, its signature in
 * verifier.ts.
 * Rules:
 * - An account (a bot, usually) maps to one agent, or to nothing; logins ignore case.
 * - `push`, `pull_request`, `deployment` and `deployment_status` are recorded in the ledger as
 *   `github.<event>`, linked to the agent whose account is the event's `sender` (agentId null
 *   when the account is not mapped), with the facts worth keeping (repository, ref, head sha,
 *   pull request number and action, environment). `ping` is answered and changes nothing; any
 *   other event is answered 200 and ignored (nothing stored).
 * - `deployment_protection_rule` (action `requested`) is an action of type `deploy` at the gate,
 *   as the sender's agent, against its mandate (a stopped agent's is denied there), idempotent by
 *   delivery id; answered with the decision. An unmapped sender is rejected (recorded).
 *   The action's target domain names the repository and environment (deployTarget).
 * - Each body is processed once: GitHub signs the bytes but not the X-GitHub-Delivery or
 *   X-GitHub-Event headers (nor any timestamp), so a delivery is known by the SHA-256 of its exact
 *   bytes as well as by its id. A redelivery (GitHub's "Redeliver" sends the same bytes), or a
 *   replay of a captured body under a fresh delivery id, gets the first answer and changes
 *   nothing. The route checks that a body fits the event it is labelled as (http.ts).
 * - A decided protection request (approved or rejected) is reported to GitHub's
 *   deployment_callback_url, queued in the same write as its record (callbacks.ts).
 */
export const RECORDED = ['push', 'pull_request', 'deployment', 'deployment_status'] as const;

export interface Repo {
  full_name: string;
  html_url?: string;
}
export interface GithubEvent {
  action?: string;
  sender: { login: string };
  repository?: Repo;
  [field: string]: unknown;
}

/** The fields of GitHub's events that are read here, each as GitHub may send it or leave it out. */
export interface GithubFields {
  ref?: unknown;
  after?: unknown;
  before?: unknown;
  forced?: unknown;
  commits?: unknown;
  number?: unknown;
  environment?: unknown;
  pull_request?: {
    number?: unknown;
    merged?: unknown;
    head?: { sha?: unknown; ref?: unknown };
    base?: { ref?: unknown };
  };
  deployment?: { id?: unknown; environment?: unknown; ref?: unknown; sha?: unknown };
  deployment_status?: { environment?: unknown; state?: unknown };
  deployment_callback_url?: unknown;
}

export type GithubAnswer = Record<string, unknown>;

/** A verified delivery: GitHub's id for it (unsigned) and the SHA-256 of its exact bytes (signed). */
export interface Delivery {
  id: string;
  bodyHash: string;
}
/** hookEvents source under which answers are also kept by body hash. */
const BODY_SOURCE = 'github-body';

/** What a recorded event keeps (never bodies, messages or titles: only identifying facts). */
function factsOf(event: string, body: GithubEvent): Record<string, unknown> {
  const b = body as GithubEvent & GithubFields;
  const common = { repository: body.repository?.full_name ?? null, sender: body.sender.login };
  switch (event) {
    case 'push':
      return {
        ...common,
        ref: b.ref ?? null,
        headSha: b.after ?? null,
        before: b.before ?? null,
        forced: b.forced === true,
        commits: Array.isArray(b.commits) ? b.commits.length : 0,
      };
    case 'pull_request':
      return {
        ...common,
        action: b.action ?? null,
        number: b.number ?? b.pull_request?.number ?? null,
        headSha: b.pull_request?.head?.sha ?? null,
        headRef: b.pull_request?.head?.ref ?? null,
        baseRef: b.pull_request?.base?.ref ?? null,
        merged: b.pull_request?.merged === true,
      };
    case 'deployment':
      return {
        ...common,
        action: b.action ?? null,
        deploymentId: b.deployment?.id ?? null,
        environment: b.deployment?.environment ?? null,
        ref: b.deployment?.ref ?? null,
        headSha: b.deployment?.sha ?? null,
      };
    default:
      return {
        ...common,
        action: b.action ?? null,
        deploymentId: b.deployment?.id ?? null,
        environment: b.deployment_status?.environment ?? b.deployment?.environment ?? null,
        state: b.deployment_status?.state ?? null,
        headSha: b.deployment?.sha ?? null,
      };
  }
}

/**
 * GitHub's verified deliveries and the accounts mapped to agents (the rules above). Reads and
 * writes the `githubBots` and `hookEvents` tables, decides deployments at the gate, queues their
 * reports (callbacks.ts) and records each delivery it acts on.
 */
export interface Github {
  /** The workspace's mapped accounts. */
  bots(wid: string): Promise<GithubBotRecord[]>;
  /** Maps an account to an agent of the workspace, or unmaps it (null); recorded (`github.bot_mapped`). */
  mapBot(wid: string, login: string, agentId: string | null, by: string): Promise<GithubBotRecord>;
  /**
   * One verified delivery (its body validated by the route): a deployment protection request
   * decided at the gate as the sender's agent, a listed event recorded, others received. A
   * delivery seen before (by id, or the same bytes under another id) gets its first answer.
   */
  handle(wid: string, d: Delivery, event: string, body: GithubEvent): Promise<GithubAnswer>;
}

export interface GithubDeps {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  gate: Gate;
  callbacks: GithubCallbacks;
}

export function createGithub(deps: GithubDeps): Github {
  const { store, clock, ledger, gate, callbacks } = deps;
  const repo = integrationsRepo(store);
  const actor = 'github';
  const agentOf = async (wid: string, login: string): Promise<string | null> =>
    (await repo.githubBot(wid, login))?.agentId ?? null;

  /** The first answer to this delivery id, or to these exact bytes under any delivery id. */
  const seenAnswer = async (wid: string, d: Delivery): Promise<GithubAnswer | undefined> => {
    const [byId, byBody] = await Promise.all([
      repo.hookEvent(wid, 'github', d.id),
      repo.hookEvent(wid, BODY_SOURCE, d.bodyHash),
    ]);
    return (byId ?? byBody)?.answer;
  };

  /**
   * Stores a delivery's answer and its ledger record in one write, unless the delivery (by id or
   * by body) was processed meanwhile: then the first answer, and nothing changes.
   */
  const once = async (
    wid: string,
    d: Delivery,
    answer: GithubAnswer,
    record?: () => Promise<void>,
  ): Promise<GithubAnswer> =>
    store.write(async () => {
      const seen = await seenAnswer(wid, d);
      if (seen) return seen;
      await record?.();
      const entry = { answer, at: isoAt(clock.now()) };
      await repo.putHookEvent(wid, 'github', d.id, entry);
      await repo.putHookEvent(wid, BODY_SOURCE, d.bodyHash, entry);
      return answer;
    });

  const protectionDeps = { ledger, gate, callbacks, agentOf, once };

  return {
    bots(wid: string): Promise<GithubBotRecord[]> {
      return repo.githubBots(wid);
    },

    async mapBot(wid: string, login: string, agentId: string | null, by: string): Promise<GithubBotRecord> {
      return store.write(async () => {
        if (agentId !== null) {
          const agent = await repo.agent(wid, agentId);
          if (!agent || agent.removedAt)
            throw new AppError('not_found', { message: `No agent ${agentId} in this workspace.` });
        }
        const record: GithubBotRecord = {
          login,
          workspaceId: wid,
          agentId,
          updatedAt: isoAt(clock.now()),
          updatedBy: by,
        };
        await repo.putGithubBot(record);
        await ledger.record({
          workspaceId: wid,
          actor: by,
          kind: 'github.bot_mapped',
          subject: login,
          data: { agentId },
        });
        return record;
      });
    },

    async handle(wid: string, d: Delivery, event: string, body: GithubEvent): Promise<GithubAnswer> {
      const seen = await seenAnswer(wid, d);
      if (seen) return seen;
      if (event === 'ping') return { received: true, event, recorded: false };
      if (event === 'deployment_protection_rule') {
        if (body.action !== 'requested' || !body.repository) return { received: true, event, recorded: false };
        return decideProtection(protectionDeps, wid, d, body);
      }
      if (!(RECORDED as readonly string[]).includes(event)) return { received: true, event, recorded: false };
      const agentId = await agentOf(wid, body.sender.login);
      const kind = `github.${event}`;
      return once(wid, d, { received: true, event, recorded: true, agentId }, async () => {
        await ledger.record({
          workspaceId: wid,
          actor,
          kind,
          subject: d.id,
          data: { ...factsOf(event, body), agentId },
        });
      });
    },
  };
}
