import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { expectStatus, ownerConsole, type Person } from '../helpers/console.js';
import type { Clock } from '../../src/lib/clock.js';
import { serveInProcess, type ServedInProcess } from '../helpers/in-process.js';
import type { MockVendor } from '../helpers/mock-vendor.js';

/**
 * A gateway under test: the real server (in this process, listening on loopback, its log kept
 * at info) configured with the mock vendor as two providers (an OpenAI-kind and an
 * Anthropic-kind one), a catalogue of three models, and the official SDKs pointed at the gateway
 * with workspace keys minted in the console.
 */
export const CATALOGUE = [
  {
    id: 'small',
    provider: 'vendor-o',
    upstreamModel: 'small-2026',
    priceMicrosPerMTokIn: 150_000,
    priceMicrosPerMTokOut: 600_000,
    quality: 1,
    latency: 1,
    jurisdiction: { domicile: 'US', region: 'us-east' },
    taskClasses: ['*'],
  },
  {
    id: 'large',
    provider: 'vendor-o',
    upstreamModel: 'large-2026',
    priceMicrosPerMTokIn: 3_000_000,
    priceMicrosPerMTokOut: 12_000_000,
    quality: 3,
    latency: 2,
    jurisdiction: { domicile: 'US', region: 'us-east' },
    taskClasses: ['*'],
  },
  {
    id: 'claude-eu',
    provider: 'vendor-a',
    upstreamModel: 'claude-eu-2026',
    priceMicrosPerMTokIn: 1_000_000,
    priceMicrosPerMTokOut: 5_000_000,
    quality: 2,
    latency: 1,
    jurisdiction: { domicile: 'EU', region: 'eu-west' },
    taskClasses: ['*'],
  },
];

export const PROFILES = [
  { id: 'eu-only', domiciles: ['EU'], signOff: 'the data protection officer' },
  { id: 'us-only', domiciles: ['US'] },
  { id: 'jp-only', domiciles: ['JP'], signOff: 'the CISO' },
  { id: 'watching', enforcement: 'shadow' },
  { id: 'watching-eu', enforcement: 'shadow', domiciles: ['EU'], signOff: 'the data protection officer' },
];

export function gatewayConfig(vendor: MockVendor, gateway: Record<string, unknown> = {}): unknown {
  return {
    gateway: {
      enforcement: 'enforce',
      providers: [
        { id: 'vendor-o', kind: 'openai', baseUrl: vendor.openaiBase, apiKeyEnv: 'VENDOR_O_KEY' },
        { id: 'vendor-a', kind: 'anthropic', baseUrl: vendor.anthropicBase, apiKeyEnv: 'VENDOR_A_KEY' },
      ],
      models: CATALOGUE,
      policyProfiles: PROFILES,
      highRiskTaskClasses: ['medical.*'],
      home: { domicile: 'EU' },
      breaker: { failures: 3, cooldownMs: 60_000 },
      ...gateway,
    },
  };
}

export const VENDOR_ENV = {
  VENDOR_O_KEY: 'sk-mock-openai',
  VENDOR_A_KEY: 'sk-mock-anthropic',
  SVC_SIGNIN_RATE_PER_MINUTE: '1000',
};

export interface Gateway {
  server: ServedInProcess;
  owner: Person;
  /** Mints a workspace key in the console; returns its value. */
  key(input?: Record<string, unknown>): Promise<string>;
  openai(key: string, headers?: Record<string, string>): OpenAI;
  anthropic(key: string, headers?: Record<string, string>): Anthropic;
}

export async function startGateway(
  vendor: MockVendor,
  gateway: Record<string, unknown> = {},
  env: Record<string, string> = {},
  options: { clock?: Clock } = {},
): Promise<Gateway> {
  const server = await serveInProcess({
    config: gatewayConfig(vendor, gateway),
    env: { ...VENDOR_ENV, ...env },
    logLevel: 'info',
    ...options,
  });
  const owner = await ownerConsole(server);
  let n = 0;
  return {
    server,
    owner,
    async key(input = {}) {
      n += 1;
      return expectStatus(
        await owner.send('POST', '/keys', {
          scope: 'inference',
          name: `k${n}`,
          principal: 'alice',
          team: 'search',
          ...input,
        }),
        201,
        'key',
      ).body.key as string;
    },
    openai: (key, headers = {}) =>
      new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0, defaultHeaders: headers }),
    anthropic: (key, headers = {}) =>
      new Anthropic({ apiKey: key, baseURL: server.url, maxRetries: 0, defaultHeaders: headers }),
  };
}

export const user = (content: string) => [{ role: 'user' as const, content }];
