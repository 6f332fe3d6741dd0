import { createHash } from 'node:crypto';
import type { Gate } from '../../gate/service.js';
import type { Ledger } from '../../ledger/service.js';
import type { GithubCallbacks } from './callbacks.js';
import type { Delivery, GithubAnswer, GithubEvent, GithubFields, Repo } from './service.js';

/**
 * A deployment protection request (service.ts lists the rules): a `deploy` action at the gate as
 * the sender's agent, its target naming the repository and environment; an unmapped sender
 * rejected. The answer, its ledger record and the report to GitHub (callbacks.ts) are written in
 * one write, once per delivery; a review is not reported until decided.
 */

export interface ProtectionDeps {
  ledger: Ledger;
  gate: Gate;
  callbacks: GithubCallbacks;
  /** The agent an account is mapped to, or null. */
  agentOf(wid: string, login: string): Promise<string | null>;
  /** Stores a delivery's answer with its effects in one write, unless it was processed meanwhile (then the first answer). */
  once(wid: string, d: Delivery, answer: GithubAnswer, record?: () => Promise<void>): Promise<GithubAnswer>;
}

const actor = 'github';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * One DNS label for a name: the name itself (lower-cased) when it already is a label without
 * `--`; otherwise `h--` and 16 hex digits of its SHA-256. Labels made the first way never hold
 * `--` and those made the second way always do, so two different names never share a label
 * (short of a hash collision): a mandate naming one repository cannot be met by another.
 */
export function label(name: string): string {
  const lower = name.toLowerCase();
  return LABEL.test(lower) && !lower.includes('--')
    ? lower
    : `h--${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}

/**
 * The target domain of a deployment: `<environment>.<repo>.<owner>.<host>`, host from the
 * repository's address (github.com by default). A mandate rule then allows one environment
 * (`production.app.acme.github.com`) or all of a repository's (`*.app.acme.github.com`).
 */
export function deployTarget(repository: Repo, environment: string): string {
  const [owner = '', repo = ''] = repository.full_name.split('/');
  let host = 'github.com';
  try {
    if (repository.html_url) host = new URL(repository.html_url).hostname.toLowerCase();
  } catch {
    /* the default */
  }
  return [label(environment), label(repo), label(owner), host].join('.');
}

/** Decides one protection request (by delivery and body once), answering GitHub's check with the state. */
export async function decideProtection(
  deps: ProtectionDeps,
  wid: string,
  d: Delivery,
  body: GithubEvent,
): Promise<GithubAnswer> {
  const { ledger, gate, callbacks, agentOf, once } = deps;
  const delivery = d.id;
  const b = body as GithubEvent & GithubFields;
  const environment = String(b.environment ?? b.deployment?.environment ?? '');
  const repository = body.repository!;
  const facts = {
    repository: repository.full_name,
    environment,
    ref: b.deployment?.ref ?? null,
    headSha: b.deployment?.sha ?? null,
    deploymentId: b.deployment?.id ?? null,
    sender: body.sender.login,
  };
  const agentId = await agentOf(wid, body.sender.login);
  if (!agentId) {
    const answer = {
      state: 'rejected',
      decision: null,
      actionId: null,
      agentId: null,
      reason: `GitHub account ${body.sender.login} is not mapped to an agent.`,
    };
    return once(wid, d, answer, async () => {
      await ledger.record({
        workspaceId: wid,
        actor,
        kind: 'github.deployment_rejected',
        subject: delivery,
        data: { ...facts, agentId: null, reason: 'unmapped account' },
      });
      await callbacks.enqueueInWrite(wid, {
        delivery,
        url: b.deployment_callback_url,
        environment,
        state: 'rejected',
        comment: `svc: ${answer.reason}`,
        actionId: null,
      });
    });
  }
  const { action } = await gate.authorize(
    { workspaceId: wid, agentId },
    {
      type: 'deploy',
      summary: `Deploy ${repository.full_name} to ${environment}`.slice(0, 1000),
      target: { domain: deployTarget(repository, environment) },
      // The body's hash makes a redelivery (or a replay under another delivery id) the same
      // action, even if the first answer was lost.
      idempotencyKey: `github:${d.bodyHash}`,
      metadata: { githubDelivery: delivery, ...facts },
    },
  );
  const state = action.decision === 'allow' ? 'approved' : action.decision === 'review' ? 'waiting' : 'rejected';
  const answer = {
    state,
    decision: action.decision,
    actionId: action.id,
    agentId,
    approvalId: action.approvalId,
    reason: action.reason,
  };
  return once(wid, d, answer, async () => {
    await ledger.record({
      workspaceId: wid,
      actor,
      kind: 'github.deployment_protection',
      subject: delivery,
      data: { ...facts, agentId, actionId: action.id, state },
    });
    // Decided: GitHub is told, durably (queued in this same write). A review is not decided yet.
    if (state !== 'waiting') {
      await callbacks.enqueueInWrite(wid, {
        delivery,
        url: b.deployment_callback_url,
        environment,
        state: state as 'approved' | 'rejected',
        comment: `svc ${action.decision} (action ${action.id})${action.reason ? `: ${action.reason}` : ''}`,
        actionId: action.id,
      });
    }
  });
}
