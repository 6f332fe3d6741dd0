import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { AgentsService } from '../agents/index.js';
import type { Gate } from '../gate/service.js';
import type { Gateway } from '../gateway/service.js';
import type { KillSwitch } from '../killswitch/service.js';
import type { Ledger } from '../ledger/service.js';
import type { MandatesService } from '../mandates/index.js';
import type { Store } from '../store/index.js';
import { DRILL_PROBE } from './probe.js';
import { drillsRepo } from './repo.js';

/**
 * Kill-switch drills (issue 5): proof, on demand, that a freeze takes effect.
 * Rules:
 * - A drill never touches a real agent: it registers a drill agent of its own (tag `drill`),
 *   checks that the agent is served while running, freezes it (hold `drill`), measures the time
 *   until every enforcement point refuses it, then lifts its own hold (the only hold a drill may
 *   lift) and removes the agent.
 * - Enforcement points probed: the gate (an action request), and the model gateway and the MCP
 *   proxy (the standing check every model call and proxied tool call passes first; nothing is
 *   sent to a vendor or an upstream).
 * - One drill per hour per workspace per token: 429 drill_cooldown with retry-after.
 * - The report is a ledger record under the token's name and id, and is kept for the scorecard.
 * - Everything a drill writes (its agent, mandate, hold) is recorded under the token's name and id.
 */
export interface DrillPoint {
  point: 'gate' | 'gateway' | 'mcp';
  passed: boolean;
  timeToEffectMs: number | null;
  detail: string;
}

export interface DrillReport {
  id: string;
  passed: boolean;
  points: DrillPoint[];
  drillAgentId: string;
  startedAt: string;
  finishedAt: string;
}

export const DRILL_COOLDOWN_MS = 3_600_000;

type Admission = { admitted: true } | { admitted: false; type: string };

/** An enforcement point that checks standing first: it admitted the running agent and refuses the frozen one. */
function standingPoint(
  point: 'gateway' | 'mcp',
  before: Admission,
  after: Admission,
  frozeAt: number,
  name: string,
  refusedText: string,
): DrillPoint {
  const ms = Math.round((performance.now() - frozeAt) * 100) / 100;
  const stopped = !after.admitted && after.type === 'agent_stopped';
  return {
    point,
    passed: before.admitted && stopped,
    timeToEffectMs: stopped ? ms : null,
    detail: !before.admitted
      ? `the running drill agent was refused by ${name}`
      : stopped
        ? refusedText
        : `the frozen drill agent was let through by ${name}`,
  };
}

export function createDrills(deps: {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  agents: AgentsService;
  mandates: MandatesService;
  killSwitch: KillSwitch;
  gate: Gate;
  gateway: Pick<Gateway, 'admitsAgent'>;
  mcp: Pick<Gateway, 'admitsAgent'>;
}): Drills {
  const { store, clock, ledger, agents, mandates, killSwitch, gate, gateway, mcp } = deps;
  const repo = drillsRepo(store);

  return {
    async run(wid: string, token: { actor: string; tokenId: string }): Promise<DrillReport> {
      const startedMs = clock.now();
      // The cooldown is claimed in one write, so two racing drills cannot both pass it.
      await store.write(async () => {
        const last = await repo.lastRun(wid, token.tokenId);
        if (last && startedMs - Date.parse(last) < DRILL_COOLDOWN_MS) {
          const retry = Math.ceil((Date.parse(last) + DRILL_COOLDOWN_MS - startedMs) / 1000);
          throw new AppError('drill_cooldown', {
            message: `This token ran a drill in this workspace at ${last}; the next may run in ${retry} s.`,
            headers: { 'retry-after': String(retry) },
          });
        }
        await repo.putLastRun(wid, token.tokenId, isoAt(startedMs));
      });
      const who = { actor: token.actor, tokenId: token.tokenId };
      const agent = await agents.create({ workspaceId: wid, name: `drill-${isoAt(startedMs)}`, tags: ['drill'] }, who);
      const probe = { type: DRILL_PROBE, summary: 'Kill-switch drill probe' };
      const points: DrillPoint[] = [];
      try {
        await mandates.put(wid, agent.id, { rules: [{ actions: [DRILL_PROBE] }], confirmBroaden: false }, who);
        const before = (await gate.authorize({ workspaceId: wid, agentId: agent.id }, probe)).action;
        const gatewayBefore = await gateway.admitsAgent(wid, agent.id);
        const mcpBefore = await mcp.admitsAgent(wid, agent.id);
        const frozeAt = performance.now();
        await killSwitch.stop(wid, agent.id, { hold: 'drill', reason: 'kill-switch drill' }, who);
        const after = (await gate.authorize({ workspaceId: wid, agentId: agent.id }, probe)).action;
        const ms = Math.round((performance.now() - frozeAt) * 100) / 100;
        const refused = after.decision === 'deny' && after.signals.includes('agent_frozen');
        points.push({
          point: 'gate',
          passed: before.decision === 'allow' && refused,
          timeToEffectMs: refused ? ms : null,
          detail:
            before.decision !== 'allow'
              ? `the running drill agent was not served (${before.decision})`
              : refused
                ? 'the next action request was denied with agent_frozen'
                : `the frozen drill agent was answered ${after.decision}`,
        });
        points.push(
          standingPoint(
            'gateway',
            gatewayBefore,
            await gateway.admitsAgent(wid, agent.id),
            frozeAt,
            'the gateway',
            'the next model call was refused with 403 agent_stopped before anything was sent',
          ),
        );
        points.push(
          standingPoint(
            'mcp',
            mcpBefore,
            await mcp.admitsAgent(wid, agent.id),
            frozeAt,
            'the MCP proxy',
            'the next proxied tool call was refused with agent_stopped before the upstream was contacted',
          ),
        );
      } finally {
        await killSwitch.liftDrillHold(wid, agent.id, who);
        await agents.remove(wid, agent.id, who);
      }
      const report: DrillReport = {
        id: `drill_${startedMs}`,
        passed: points.length > 0 && points.every((p) => p.passed),
        points,
        drillAgentId: agent.id,
        startedAt: isoAt(startedMs),
        finishedAt: isoAt(clock.now()),
      };
      await store.write(async () => {
        await ledger.record({
          workspaceId: wid,
          actor: token.actor,
          tokenId: token.tokenId,
          kind: 'drill.completed',
          subject: agent.id,
          data: { ...report },
        });
        await repo.putReport(wid, {
          id: report.id,
          tokenId: token.tokenId,
          passed: report.passed,
          startedAt: report.startedAt,
          finishedAt: report.finishedAt,
          points: report.points.map((p) => ({ point: p.point, passed: p.passed, timeToEffectMs: p.timeToEffectMs })),
        });
      });
      return report;
    },
  };
}

/**
 * Kill-switch drills (the rules above). Writes the drill's own agent, mandate and hold through the
 * agents, mandates and kill-switch services, the `drills` cooldown and the `drillReports` table,
 * and a `drill.completed` ledger record.
 */
export interface Drills {
  /**
   * Runs one drill for the workspace as the token (`actor` as the ledger names it): its report,
   * passed or not; 429 drill_cooldown, without running, within the hour of the token's last one.
   */
  run(wid: string, token: { actor: string; tokenId: string }): Promise<DrillReport>;
}
