import { EXIT, SvcCommand } from '../src/cli/base-command.js';
import { RemoteError } from '../src/cli/http-client.js';
import { tokenClient, tokenFlags } from '../src/cli/flags.js';
import type { DrillReport } from '../src/drills/service.js';

export default class Drill extends SvcCommand {
  static override summary = 'Run a kill-switch drill through the server; exit 1 if any enforcement point failed.';
  static override description =
    'Made for a CI step: a drill agent of its own is frozen, every enforcement point is probed, the time to effect is measured, and the drill lifts its own hold. Needs a service token with scope agents:freeze (SVC_TOKEN). One drill per hour per workspace per token: a second run within the hour is refused without running, exit 4 ("not run"), so a CI re-run is not a failure.';
  static override examples = ['SVC_TOKEN=ims_... SVC_URL=https://svc.acme.example <%= config.bin %> drill --json'];
  static override flags = tokenFlags('agents:freeze');

  async run(): Promise<DrillReport> {
    const { flags } = await this.parse(Drill);
    const client = tokenClient(flags);
    const report = await this.progress('Running a kill-switch drill', () =>
      client.drill().catch((err: unknown) => {
        if (err instanceof RemoteError && err.type === 'drill_cooldown')
          this.fail(`not run: ${err.message}`, EXIT.notRun, err.type, err.fix);
        throw err;
      }),
    );
    for (const p of report.points) {
      const took = p.timeToEffectMs === null ? '-' : `${p.timeToEffectMs} ms`;
      this.log(`${p.passed ? 'passed' : 'FAILED'}  ${p.point}  ${took}  ${p.detail}`);
    }
    this.log(report.passed ? 'drill passed' : 'drill FAILED');
    if (!report.passed) this.checkedFalse();
    return report;
  }
}
