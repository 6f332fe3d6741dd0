import test from 'ava';
import fc from 'fast-check';
import { controlFigures, median } from '../../src/scorecard/figures.js';
import type { ApprovalRecord } from '../../src/approvals/records.js';

/** The scorecard's arithmetic, on its own: medians, waits, and refusals by signal. */

const approval = (status: ApprovalRecord['status'], createdAt: string, decidedAt?: string): ApprovalRecord => ({
  id: 'apr_x',
  workspaceId: 'ws_x',
  actionId: 'act_x',
  agentId: 'agt_x',
  status,
  approvers: null,
  approvals: [],
  requiredApprovals: 1,
  separationOfDuties: false,
  createdAt,
  expiresAt: '2030-01-01T00:00:00.000Z',
  ...(decidedAt ? { decidedAt } : {}),
});

test('median of odd and even counts, and of nothing', (t) => {
  t.is(median([]), null);
  t.is(median([5, 1, 3]), 3);
  t.is(median([4, 1, 3, 2]), 2.5);
});

test('property: a median lies between the smallest and the largest value', (t) => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: -1e6, max: 1e6 }), { minLength: 1, maxLength: 50 }), (values) => {
      const m = median(values)!;
      return m >= Math.min(...values) && m <= Math.max(...values);
    }),
  );
  t.pass();
});

test('waits count decided approvals only; refusals count denied actions (drill probes aside) and each of their signals', (t) => {
  const figures = controlFigures({
    agents: [{ status: 'running' }, { status: 'stopped' }, { status: 'stopped' }],
    drills: [
      {
        id: 'd1',
        tokenId: 'tok_a',
        passed: true,
        startedAt: '2026-01-01T00:00:00.000Z',
        finishedAt: '2026-01-01T00:00:01.000Z',
        points: [{ point: 'gate', passed: true, timeToEffectMs: 2 }],
      },
      {
        id: 'd2',
        tokenId: 'tok_a',
        passed: false,
        startedAt: '2026-02-01T00:00:00.000Z',
        finishedAt: '2026-02-01T00:00:01.000Z',
        points: [{ point: 'gate', passed: false, timeToEffectMs: null }],
      },
    ],
    approvals: [
      approval('approved', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:10.000Z'),
      approval('denied', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:30.000Z'),
      approval('expired', '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z'),
      approval('pending', '2026-01-01T00:00:00.000Z'),
    ],
    actions: [
      { type: 'payment', decision: 'allow', signals: [] },
      { type: 'payment', decision: 'deny', signals: ['over_limit', 'period_limit'] },
      { type: 'payment', decision: 'deny', signals: ['over_limit'] },
      { type: 'payment', decision: 'review', signals: [] },
      { type: 'drill.probe', decision: 'deny', signals: ['agent_frozen'] },
    ],
  });
  t.deepEqual(figures, {
    agents: { total: 3, running: 1, stopped: 2 },
    drills: { run: 2, passed: 1, failed: 1, lastAt: '2026-02-01T00:00:00.000Z', timeToEffectMs: { median: 2, max: 2 } },
    approvals: { decided: 2, approved: 1, denied: 1, expired: 1, pending: 1, medianWaitSeconds: 20 },
    refusals: { total: 2, bySignal: { over_limit: 2, period_limit: 1 } },
  });
});
