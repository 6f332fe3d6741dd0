/**
 * The soak's server (and the store-growth measurement's), set up as an operator and an owner would,
 * with every path the traffic takes switched on:
 * - a store made by `svc init`; an inference key (a principal, a team, a policy profile) and an
 *   admin key made with `svc keys create --local`;
 * - the real `svc serve` from dist/ with info-level request logs, the gateway in enforce mode over
 *   the mock vendor (the gateway benchmark's catalogue, test/bench/gateway-fixture.ts);
 * - through the console API as the owner (session + CSRF header): data-loss mode `redact`; agents,
 *   each with a mandate (payments to acme.example in EUR up to 5000, a person's approval above
 *   2000; `mcp.files.echo` anywhere) and a key; the upstream MCP server added as `files` with its
 *   secret and an allow-list of `echo`;
 * - through POST /v1/admin/budgets: a workspace budget far too large to block.
 * Every traffic source is one loopback address, so the per-address limit on public routes
 * (`POST /v1/verify`) is lifted; the per-agent gate limit stays as shipped, and the driver spreads
 * its gate traffic over enough agents to stay under half of it.
 * Load shedding (503 `overloaded` when the event loop is delayed over a second) can be turned off:
 * on a shared machine a process that waits its turn for a CPU sees its event loop "delayed", and
 * sheds load that it could serve; the soak looks for leaks and errors, and with shedding off a
 * starved moment shows as latency while every 5xx is an error.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bearer, call, csrf, signIn } from '../helpers/http.js';
import { BIN, cleanEnv } from '../helpers/process.js';
import { startChild, type Child } from '../bench/children.js';
import { cli, config, VENDOR_ENV } from '../bench/gateway-fixture.js';

export const OWNER = { email: 'soak@localhost', password: 'soak password 0123' };
/** The upstream's name in the workspace, and the one tool the agents' mandates allow. */
export const UPSTREAM = { name: 'files', tool: 'echo', secret: 'soak-upstream-secret-0123' };
/** What the agents may pay without a person (above it: review; above MAX or elsewhere: deny). */
export const PAYMENT = { merchant: 'acme.example', currency: 'EUR', approvalAbove: 2000, max: 5000 };
/** The gate's per-agent limit as shipped (settings: rateLimits.gatePerMinute). */
export const GATE_PER_MINUTE = 600;

export interface SoakAgent {
  id: string;
  key: string;
}

export interface SoakServer {
  server: Child<{ listening: string }>;
  dataDir: string;
  workspaceId: string;
  ownerId: string;
  /** The owner's session cookie (console reads and approvals). */
  cookie: string;
  agents: SoakAgent[];
  inferenceKey: string;
  adminKey: string;
}

const expectStatus = (what: string, reply: { status: number; text: string }, status: number) => {
  if (reply.status !== status)
    throw new Error(`${what}: expected ${status}, got ${reply.status} ${reply.text.slice(0, 400)}`);
};

export async function startSoakServer(options: {
  dataDir: string;
  vendorUrl: string;
  upstreamUrl: string;
  agents: number;
  /** Lifts the per-agent gate limit (a measurement that sends as fast as it can). */
  unlimitedGate?: boolean;
  /** false: no limit on event-loop delay (load.maxEventLoopDelayMs 0); the sampling stays on. */
  loadShedding?: boolean;
  /** Node flags for the server (--inspect=…, --cpu-prof). */
  nodeFlags?: string[];
  onStderr?: (text: string) => void;
}): Promise<SoakServer> {
  const { dataDir } = options;
  const store = ['--local', '--data-dir', dataDir];
  const { workspaceId, ownerId } = await cli<{ workspaceId: string; ownerId: string }>(
    ['init', '--data-dir', dataDir, '--workspace', 'Soak', '--owner-email', OWNER.email, '--owner-password-stdin'],
    OWNER.password,
  );
  const key = async (...flags: string[]) => (await cli<{ key: string }>(['keys', 'create', ...flags, ...store])).key;
  const inferenceKey = await key(
    ...['--scope', 'inference', '--name', 'soak', '--principal', 'soak', '--team', 'soak'],
    ...['--task-class', 'general', '--policy-profile', 'us-only'],
  );
  const adminKey = await key('--scope', 'admin', '--name', 'soak-admin');

  const configFile = join(dataDir, 'soak-config.json');
  const settings = {
    ...(config(options.vendorUrl) as object),
    ...(options.loadShedding === false ? { load: { maxEventLoopDelayMs: 0 } } : {}),
  };
  await writeFile(configFile, JSON.stringify(settings));
  const env = cleanEnv({
    ...VENDOR_ENV,
    SVC_LOG_LEVEL: 'info',
    SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1',
    SVC_PUBLIC_RATE_PER_MINUTE: '100000000',
    ...(options.unlimitedGate ? { SVC_GATE_RATE_PER_MINUTE: '100000000' } : {}),
  });
  const server = await startChild<{ listening: string }>(
    [
      ...(options.nodeFlags ?? []),
      BIN,
      'serve',
      '--json',
      '--data-dir',
      dataDir,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--config',
      configFile,
    ],
    env,
    options.onStderr,
  );
  try {
    const base = server.url;
    const cookie = await signIn(base, OWNER.email, OWNER.password);
    const headers = { ...csrf, cookie };
    expectStatus(
      'data-loss mode',
      await call(base, 'PUT', `/api/w/${workspaceId}/gateway`, { headers, json: { dataLoss: 'redact' } }),
      200,
    );
    expectStatus(
      'workspace budget',
      await call(base, 'POST', '/v1/admin/budgets', {
        headers: bearer(adminKey),
        json: {
          scope: { kind: 'workspace', id: workspaceId },
          amountMicros: 1_000_000_000_000_000,
          period: 'month',
          ladder: [
            { at: 0.9, step: 'nudge' },
            { at: 1, step: 'block' },
          ],
        },
      }),
      201,
    );
    const rules = [
      {
        actions: ['payment'],
        merchants: [PAYMENT.merchant],
        currencies: [PAYMENT.currency],
        maxAmount: PAYMENT.max,
        approval: { above: PAYMENT.approvalAbove },
      },
      { actions: [`mcp.${UPSTREAM.name}.${UPSTREAM.tool}`], domains: ['*'] },
    ];
    const agents: SoakAgent[] = [];
    for (let i = 0; i < options.agents; i += 1) {
      const agent = await call(base, 'POST', `/api/w/${workspaceId}/agents`, {
        headers,
        json: { name: `soak-bot-${i + 1}`, tags: ['soak'] },
      });
      expectStatus('agent', agent, 201);
      const id = agent.body.id as string;
      expectStatus(
        'mandate',
        await call(base, 'PUT', `/api/w/${workspaceId}/agents/${id}/mandate`, {
          headers,
          json: { rules, confirmBroaden: true },
        }),
        200,
      );
      const minted = await call(base, 'POST', `/api/w/${workspaceId}/agents/${id}/keys`, { headers, json: {} });
      expectStatus('agent key', minted, 201);
      agents.push({ id, key: minted.body.key as string });
    }
    expectStatus(
      'upstream MCP server',
      await call(base, 'POST', `/api/w/${workspaceId}/mcp-servers`, {
        headers,
        json: { name: UPSTREAM.name, url: options.upstreamUrl, secret: UPSTREAM.secret, allowTools: [UPSTREAM.tool] },
      }),
      201,
    );
    return { server, dataDir, workspaceId, ownerId, cookie, agents, inferenceKey, adminKey };
  } catch (err) {
    await server.stop();
    throw err;
  }
}
