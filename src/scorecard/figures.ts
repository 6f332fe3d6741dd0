import type { AgentView } from '../agents/index.js';
import { DRILL_PROBE } from '../drills/probe.js';
import type { ApprovalRecord } from '../approvals/records.js';
import type { DrillReportRecord } from '../drills/records.js';
import type { ActionRecord } from '../gate/records.js';

/**
 * The workspace's control figures (issue 5), computed from what the store holds (service.ts reads it):
 * - agents: live agents, and how many are stopped (any hold, or "stop every agent");
 * - drills: run, passed, failed, the newest, and the time to effect (median and worst, in ms) over
 *   every enforcement point of every drill that measured one;
 * - approvals: decided (approved or denied by people or the system), expired, still pending, and
 *   the median wait from request to decision in seconds;
 * - refusals: denied actions, and how many carried each signal (one action may carry several);
 *   a drill's probes are counted under drills, not here.
 */
export interface ControlFigures {
  agents: { total: number; running: number; stopped: number };
  drills: {
    run: number;
    passed: number;
    failed: number;
    lastAt: string | null;
    timeToEffectMs: { median: number | null; max: number | null };
  };
  approvals: {
    decided: number;
    approved: number;
    denied: number;
    expired: number;
    pending: number;
    medianWaitSeconds: number | null;
  };
  refusals: { total: number; bySignal: Record<string, number> };
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** When a decided approval stopped waiting: recorded when it settles; on older records, its last approval. */
const decidedAt = (a: ApprovalRecord): string | undefined => a.decidedAt ?? a.approvals[a.approvals.length - 1]?.at;

export function controlFigures(input: {
  agents: Iterable<Pick<AgentView, 'status'>>;
  drills: Iterable<DrillReportRecord>;
  approvals: Iterable<ApprovalRecord>;
  actions: Iterable<Pick<ActionRecord, 'type' | 'decision' | 'signals'>>;
}): ControlFigures {
  const agents = { total: 0, running: 0, stopped: 0 };
  for (const a of input.agents) {
    agents.total += 1;
    agents[a.status] += 1;
  }

  let run = 0;
  let passed = 0;
  let lastAt: string | null = null;
  const effects: number[] = [];
  for (const d of input.drills) {
    run += 1;
    if (d.passed) passed += 1;
    if (lastAt === null || d.startedAt > lastAt) lastAt = d.startedAt;
    for (const p of d.points) if (p.timeToEffectMs !== null) effects.push(p.timeToEffectMs);
  }

  const approvals = {
    decided: 0,
    approved: 0,
    denied: 0,
    expired: 0,
    pending: 0,
    medianWaitSeconds: null as number | null,
  };
  const waits: number[] = [];
  for (const a of input.approvals) {
    approvals[a.status] += 1;
    if (a.status !== 'approved' && a.status !== 'denied') continue;
    approvals.decided += 1;
    const at = decidedAt(a);
    if (at) waits.push(Math.max(0, (Date.parse(at) - Date.parse(a.createdAt)) / 1000));
  }
  approvals.medianWaitSeconds = median(waits);

  const refusals = { total: 0, bySignal: {} as Record<string, number> };
  for (const action of input.actions) {
    if (action.decision !== 'deny' || action.type === DRILL_PROBE) continue;
    refusals.total += 1;
    for (const s of action.signals) refusals.bySignal[s] = (refusals.bySignal[s] ?? 0) + 1;
  }

  return {
    agents,
    drills: {
      run,
      passed,
      failed: run - passed,
      lastAt,
      timeToEffectMs: { median: median(effects), max: effects.length > 0 ? Math.max(...effects) : null },
    },
    approvals,
    refusals,
  };
}
