import { readStanding } from '../agents/standing.js';
import { evaluate, usageQueries, type ActionFacts, type Evaluation } from '../mandates/evaluate.js';
import type { Store } from '../store/index.js';
import type { GateRepo } from './repo.js';
import type { AuthorizeInput } from './schemas.js';
import type { GateCaller } from './service.js';

/**
 * A deny the gate itself gives, before or beside the mandate: a stopped agent (`agent_frozen`), a
 * review the asker cannot wait for (`approval_unavailable`). A decision, never an error.
 */
export interface GateDeny {
  decision: 'deny';
  rule: null;
  signals: string[];
  reason: string;
}

/** What the gate decides on an action request: its mandate's evaluation, or its own deny. */
export type Verdict = Evaluation | GateDeny;

/** The facts of a request a mandate rule looks at. */
function factsOf(
  input: {
    type: string;
    payment?: { amount: number; currency: string; merchant?: string } | null;
    target?: { domain?: string } | null;
  },
  ap2Mandate: string | null,
): ActionFacts {
  return {
    type: input.type,
    amount: input.payment?.amount ?? null,
    currency: input.payment?.currency ?? null,
    merchant: input.payment?.merchant ?? null,
    domain: input.target?.domain ?? null,
    ap2Mandate,
  };
}

/**
 * The decision on the store as it reads now: inside a write, through the write's transaction, so
 * the backend validates every read it rests on (standing, mandate, period usage). Standing first:
 * a stopped agent is denied whatever its mandate says. `ap2Mandate`: the imported AP2 mandate a
 * presented closed mandate chains to (only its rules judge).
 */
export async function decide(
  deps: { store: Store; repo: GateRepo },
  c: GateCaller,
  input: AuthorizeInput,
  nowMs: number,
  ap2Mandate: string | null = null,
): Promise<Verdict> {
  const [standing, rules] = await Promise.all([
    readStanding(deps.store, c.workspaceId, c.agentId),
    deps.repo.rules(c.workspaceId, c.agentId),
  ]);
  if (standing.stopped) {
    const by =
      standing.stoppedBy === 'workspace' ? 'Every agent of this workspace is stopped' : 'This agent is stopped';
    return {
      decision: 'deny',
      rule: null,
      signals: ['agent_frozen'],
      reason: `${by} (hold ${standing.hold}: ${standing.reason}).`,
    };
  }
  const facts = factsOf(input, ap2Mandate);
  const usage = await deps.repo.lookup(c.workspaceId, c.agentId, usageQueries(rules, facts, nowMs));
  return evaluate(rules, facts, usage, nowMs);
}
