import { expectStatus, ownerConsole } from '../helpers/console.js';
import type { LoopbackVendor } from '../helpers/loopback-vendor.js';
import { AWS_ENV, BEDROCK_REGION } from '../helpers/mock-bedrock.js';
import { GEMINI_KEY } from '../helpers/mock-gemini.js';
import type { MockVendor } from '../helpers/mock-vendor.js';
import { CATALOGUE } from '../gateway/support.js';
import { startServer, stopAndClean, type RunningServer } from '../helpers/process.js';

/**
 * A real `svc serve` (spawned) whose catalogue serves the agents' default models: Claude Code's
 * (`claude-opus-5-5`) and the Codex CLI's (`gpt-6.2-sol`), each at the provider a test names,
 * all of them the loopback mock vendor; and a workspace key for the agent.
 */
export const CLAUDE_DEFAULT = 'claude-opus-5-5';
export const CODEX_DEFAULT = 'gpt-6.2-sol';

export type Upstream = 'anthropic' | 'openai' | 'responses' | 'bedrock' | 'gemini';

/** The loopback vendors: the OpenAI- and Anthropic-shaped mock, and Bedrock's and Gemini's when used. */
export interface Vendors {
  vendor: MockVendor;
  bedrock?: LoopbackVendor;
  gemini?: LoopbackVendor;
}

/** A catalogue entry for any task class, priced and placed as the gateway tests' EU model. */
export const catalogueModel = (id: string, provider: string, upstreamModel: string) => ({
  ...CATALOGUE.find((m) => m.id === 'claude-eu')!,
  id,
  provider,
  upstreamModel,
});

/** The providers at the loopback vendors, one per upstream kind (id: the kind). */
export function providersOf({ vendor, bedrock, gemini }: Vendors): Record<string, unknown>[] {
  return [
    { id: 'anthropic', kind: 'anthropic', baseUrl: vendor.anthropicBase, apiKeyEnv: 'VENDOR_A_KEY' },
    { id: 'openai', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY' },
    { id: 'responses', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY', responses: true },
    ...(bedrock ? [{ id: 'bedrock', kind: 'bedrock', baseUrl: bedrock.url, region: BEDROCK_REGION }] : []),
    ...(gemini ? [{ id: 'gemini', kind: 'gemini', baseUrl: gemini.url, apiKeyEnv: 'GEMINI_API_KEY' }] : []),
  ];
}

export interface AgentGateway {
  server: RunningServer;
  key: string;
  stop(): Promise<void>;
}

export async function agentGateway(vendors: Vendors, models: Record<string, Upstream>): Promise<AgentGateway> {
  const server = await startServer({
    env: {
      VENDOR_O_KEY: 'sk-mock-openai',
      VENDOR_A_KEY: 'sk-mock-anthropic',
      GEMINI_API_KEY: GEMINI_KEY,
      ...AWS_ENV,
      SVC_SIGNIN_RATE_PER_MINUTE: '1000',
    },
    config: {
      gateway: {
        enforcement: 'enforce',
        providers: providersOf(vendors),
        models: Object.entries(models).map(([id, provider]) => catalogueModel(id, provider, upstreamOf(id))),
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
