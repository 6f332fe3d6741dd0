import { Flags } from '@oclif/core';
import { SvcCommand } from '../src/cli/base-command.js';
import { chosenContext } from '../src/cli/contexts.js';
import { callServer } from '../src/cli/http-client.js';
import { loadSettings } from '../src/settings/load.js';

export interface HealthResult {
  url: string;
  /** The server's answer: `{ status: "ok" }`, or /readyz's with the store's schema version. */
  answer: unknown;
}

/** A wildcard bind address is asked on loopback: the check runs beside the server. */
function localAddress(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

export default class Health extends SvcCommand {
  static override summary = 'Ask a running server whether it is alive (with --ready: ready); exit 0 if it is.';
  static override description =
    "Made for health checks of containers and service managers (the binary's Docker image holds no shell and no curl): GET /healthz, or /readyz with --ready, which answers 503 while the server drains. Without --url it asks the address the server binds, from the same settings as svc serve (--config, SVC_HOST, SVC_PORT), a wildcard host on loopback. Exit 0 healthy, 1 answered but not healthy, 3 unreachable.";
  static override examples = [
    '<%= config.bin %> health',
    '<%= config.bin %> health --ready --url http://127.0.0.1:8080 --json',
  ];
  static override flags = {
    url: Flags.string({ description: 'address of the server (default: where svc serve binds)', env: 'SVC_URL' }),
    context: Flags.string({
      description: 'ask the server of this svc login context (by name) instead of where svc serve binds',
      env: 'SVC_CONTEXT',
    }),
    config: Flags.string({ description: 'JSON config file merged over config/default.json' }),
    ready: Flags.boolean({ description: 'ask /readyz: ready to serve, not draining' }),
  };

  async run(): Promise<HealthResult> {
    const { flags } = await this.parse(Health);
    // A context only when named: the default stays the local server, as a container's check needs.
    let base = flags.url ?? (flags.context === undefined ? undefined : chosenContext(flags.context)?.context.url);
    if (!base) {
      const { server } = loadSettings(flags.config ? { configFile: flags.config } : {});
      base = `http://${localAddress(server.host)}:${server.port}`;
    }
    const path = flags.ready ? '/readyz' : '/healthz';
    const answer = await callServer<unknown>(base, 'GET', path);
    const url = new URL(path, base).toString();
    this.log(`ok: ${url}`);
    return { url, answer };
  }
}
