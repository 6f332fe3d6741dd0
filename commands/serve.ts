import { once } from 'node:events';
import { Flags } from '@oclif/core';
import { createApp } from '../src/app.js';
import { dataDirFlag, SvcCommand } from '../src/cli/base-command.js';
import { createHttpServer } from '../src/server.js';
import { systemError } from '../src/errors/system.js';
import { createLogger, prettyLogs } from '../src/lib/log.js';
import { bootstrapIfEmpty } from '../src/people/index.js';
import { loadSettings } from '../src/settings/load.js';

export default class Serve extends SvcCommand {
  static override summary = 'Start the server.';
  static override description =
    'On an empty data dir it sets up the store, and creates a workspace "Default" with an owner admin@localhost whose one-time password is printed once. Ready when it logs "listening". SIGTERM or SIGINT: stop accepting, finish in-flight requests, flush, exit 0.';
  static override examples = [
    '<%= config.bin %> serve',
    '<%= config.bin %> serve --data-dir /var/lib/svc --host 0.0.0.0 --port 8080 --config /etc/svc/config.json',
  ];
  static override flags = {
    'data-dir': dataDirFlag,
    host: Flags.string({ description: 'address to bind (default 127.0.0.1)' }),
    port: Flags.integer({ description: 'port to bind (default 8080; 0 picks a free one)', min: 0, max: 65535 }),
    config: Flags.string({ description: 'JSON config file merged over config/default.json' }),
    migrate: Flags.boolean({ description: 'migrate an older store instead of refusing to start' }),
    'metrics-port': Flags.integer({
      description: 'serve GET /metrics without a token on 127.0.0.1 at this port (0 picks a free one)',
      min: 0,
      max: 65535,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Serve);
    const settings = loadSettings({
      ...(flags.config ? { configFile: flags.config } : {}),
      overrides: {
        dataDir: flags['data-dir'],
        'server.host': flags.host,
        'server.port': flags.port,
        'observability.metricsPort': flags['metrics-port'],
      },
    });
    const log = createLogger(settings.log.level, { pretty: prettyLogs(settings.log.format, process.stderr.isTTY) });
    const app = await createApp(settings, { migrate: flags.migrate, create: true, log });
    if (app.migration) app.log.info({ from: app.migration.from, to: app.migration.to }, 'store migrated');
    // Bound before anything the operator must read is created: a start that cannot listen leaves no
    // workspace behind whose one-time password nobody saw; the next start creates it and prints it.
    const http = await createHttpServer(app);
    try {
      await http.start();
    } catch (err) {
      // What the failed start set up (hapi's initialised plugins, their timers) is stopped too.
      await http.server.stop({ timeout: 0 }).catch(() => undefined);
      await app.close();
      throw systemError(err, { kind: 'listen', host: settings.server.host, port: settings.server.port }) ?? err;
    }
    const boot = await bootstrapIfEmpty(app.services.people);
    const address = http.server.info.uri;
    // Listened for before anything says the server is up: a SIGTERM sent the moment a supervisor
    // (or a test) reads the address must drain, not meet the default action and end the process.
    const stopSignal = Promise.race([once(process, 'SIGTERM'), once(process, 'SIGINT')]);
    if (this.jsonEnabled()) {
      this.logJson({
        listening: address,
        ...(http.metricsUrl() ? { metrics: http.metricsUrl() } : {}),
        ...(boot ? { workspaceId: boot.workspaceId, owner: { email: boot.email, password: boot.password } } : {}),
      });
    } else if (boot) {
      this.log(
        [
          '',
          `  Workspace "Default" created (${boot.workspaceId}).`,
          `  Owner: ${boot.email}`,
          `  One-time password: ${boot.password}`,
          '  It is shown this once and stored only as a hash. Sign in at /login and choose your own.',
          '  Lost it? `svc owner reset-password --email admin@localhost --local` prints a new one.',
          '',
        ].join('\n'),
      );
    }
    app.log.info({ address }, 'listening');
    app.log.flush();

    const signal = await stopSignal;
    app.log.info({ signal: String(signal[0] ?? '') }, 'stopping: finishing in-flight requests');
    await http.stop();
    await app.close();
    app.log.info('stopped');
    app.log.flush();
  }
}
