import { expectStatus, ownerConsole } from '../helpers/console.js';
import type { MockVendor } from '../helpers/mock-vendor.js';
import { startServer, stopAndClean, type RunningServer } from '../helpers/process.js';

/**
 * A real `svc serve` (spawned) whose catalogue serves the agents' default models: Claude Code's
 * (`claude-opus-5-5`) and the Codex CLI's (`gpt-6.2-sol`), each at the provider a test names,
 * all of them the loopback mock vendor; and a workspace key for the agent.
 */
export const CLAUDE_DEFAULT = 'claude-opus-5-5';
export const CODEX_DEFAULT = 'gpt-6.2-sol';

const PROVIDER_KINDS = {
  anthropic: { kind: 'anthropic' },
  openai: { kind: 'openai' },
  responses: { kind: 'openai', responses: true },
} as const;
export type Upstream = keyof typeof PROVIDER_KINDS;

export interface AgentGateway {
  server: RunningServer;
  key: string;
  stop(): Promise<void>;
}

export async function agentGateway(vendor: MockVendor, models: Record<string, Upstream>): Promise<AgentGateway> {
  const providers = Object.entries(PROVIDER_KINDS).map(([id, p]) => ({
    id,
    ...p,
    baseUrl: p.kind === 'anthropic' ? vendor.anthropicBase : vendor.openaiBase,
    apiKeyEnv: p.kind === 'anthropic' ? 'VENDOR_A_KEY' : 'VENDOR_O_KEY',
  }));
  const server = await startServer({
    env: { VENDOR_O_KEY: 'sk-mock-openai', VENDOR_A_KEY: 'sk-mock-anthropic', SVC_SIGNIN_RATE_PER_MINUTE: '1000' },
    config: {
      gateway: {
        enforcement: 'enforce',
        providers,
        models: Object.entries(models).map(([id, provider]) => ({
          id,
          provider,
          upstreamModel: upstreamOf(id),
          priceMicrosPerMTokIn: 1_000_000,
          priceMicrosPerMTokOut: 5_000_000,
          quality: 2,
          latency: 1,
          jurisdiction: { domicile: 'EU', region: 'eu-west' },
          taskClasses: ['*'],
        })),
        home: { domicile: 'EU' },
      },
    },
  });
  try {
    const owner = await ownerConsole(server);
    const made = await owner.send('POST', '/keys', {
      scope: 'inference',
      name: 'agent',
      principal: 'alice',
      team: 'coding',
      defaultTaskClass: 'general',
    });
    const key = expectStatus(made, 201, 'key').body.key as string;
    return { server, key, stop: () => stopAndClean(server) };
  } catch (err) {
    await stopAndClean(server);
    throw err;
  }
}

/** The upstream model name of a catalogue id: what the mock vendor's calls and faults are keyed by. */
export const upstreamOf = (id: string): string => `${id}-upstream`;
