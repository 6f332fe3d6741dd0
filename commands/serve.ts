import { Flags } from '@oclif/core';
import { dataDirFlag, SvcCommand, storeFlag } from '../src/cli/base-command.js';
import { firstStartText, listeningJson } from '../src/cli/serve-text.js';
import { serveUntilStopped, type Listening } from '../src/cli/serving.js';
import { loadSettings } from '../src/settings/load.js';

export default class Serve extends SvcCommand {
  static override summary = 'Start the server.';
  static override description =
    'On an empty data dir it sets up the store, and creates a workspace "Default" with an owner admin@localhost whose one-time password is printed once. Ready when it logs "listening". SIGTERM or SIGINT: stop accepting, finish in-flight requests, flush, exit 0.';
  static override examples = [
    '<%= config.bin %> serve',
    '<%= config.bin %> serve --data-dir /var/lib/svc --host 0.0.0.0 --port 8080 --config /etc/svc/config.json',
    '<%= config.bin %> serve --workers 2',
    'SVC_STORE_URL=postgres://svc:PASSWORD@db.internal:5432/svc <%= config.bin %> serve --data-dir /var/lib/svc',
  ];
  static override flags = {
    'data-dir': dataDirFlag,
    store: storeFlag,
    host: Flags.string({ description: 'address to bind (default 127.0.0.1)' }),
    port: Flags.integer({ description: 'port to bind (default 8080; 0 picks a free one)', min: 0, max: 65535 }),
    config: Flags.string({ description: 'JSON config file merged over config/default.json' }),
    migrate: Flags.boolean({ description: 'migrate an older store instead of refusing to start' }),
    workers: Flags.integer({
      description: 'processes serving the one port over the one store (default 1; SVC_WORKERS)',
      min: 1,
      max: 64,
    }),
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
        storeUrl: flags.store,
        'server.host': flags.host,
        'server.port': flags.port,
        'server.workers': flags.workers,
        'observability.metricsPort': flags['metrics-port'],
      },
    });
    await serveUntilStopped(settings, {
      migrate: flags.migrate,
      announce: (l) => this.announce(l, { dataDir: settings.dataDir, storeUrl: settings.storeUrl }),
    });
  }

  private announce(listening: Listening, where: { dataDir: string; storeUrl: string | null }): void {
    if (this.jsonEnabled()) this.logJson(listeningJson(listening));
    else {
      const text = firstStartText(listening, where);
      if (text !== null) this.log(text);
    }
  }
}
