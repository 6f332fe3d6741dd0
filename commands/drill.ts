import { Flags } from '@oclif/core';
import { EXIT, SvcCommand, urlFlag } from '../src/cli/base-command.js';
import { callServer } from '../src/cli/http-client.js';
import type { DrillReport } from '../src/drills/service.js';

export default class Drill extends SvcCommand {
  static override summary = 'Run a kill-switch drill through the server; exit 1 if any enforcement point failed.';
  static override description =
    'Made for a CI step: a drill agent of its own is frozen, every enforcement point is probed, the time to effect is measured, and the drill lifts its own hold. Needs a service token with scope agents:freeze (SVC_TOKEN). One drill per hour per workspace per token: a second run within the hour exits 1 with the cooldown message.';
  static override examples = ['SVC_TOKEN=ims_... SVC_URL=https://svc.acme.example <%= config.bin %> drill --json'];
  static override flags = {
    url: urlFlag,
    token: Flags.string({ description: 'service token with scope agents:freeze', env: 'SVC_TOKEN' }),
  };

  async run(): Promise<DrillReport> {
    const { flags } = await this.parse(Drill);
    if (!flags.token) this.fail('no service token: set SVC_TOKEN (or --token)', EXIT.usage, 'unauthenticated');
    const report = await this.progress('Running a kill-switch drill', () =>
      callServer<DrillReport>(flags.url, 'POST', '/v1/admin/drills', { bearer: flags.token!, body: {} }),
    );
    for (const p of report.points)
      this.log(
        `${p.passed ? 'passed' : 'FAILED'}  ${p.point}  ${p.timeToEffectMs === null ? '-' : `${p.timeToEffectMs} ms`}  ${p.detail}`,
      );
    this.log(report.passed ? 'drill passed' : 'drill FAILED');
    if (!report.passed) this.checkedFalse();
    return report;
  }
}
