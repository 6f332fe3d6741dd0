/**
 * The gateway under benchmark, set up as an operator would, with every feature a request passes
 * through switched on:
 * - a store made by `svc init`; keys, an agent and its freeze made with the CLI (`--local`);
 * - enforce mode, a catalogue over the mock vendor (an OpenAI-kind and an Anthropic-kind
 *   provider), policy profiles, high-risk classes, the upstream secrets in the environment;
 * - the real `svc serve` from dist/ with info-level request logs;
 * - data-loss mode `redact`, set in the console by the owner (session + CSRF header);
 * - a workspace budget through POST /v1/admin/budgets (far too large to block, nudge at 90%), and
 *   a principal's budget of one micro-dollar that one real call uses up, for the budget refusal.
 * Keys: `main` (inference, default class, policy profile: the measured traffic), `spent` (its
 * budget used up: 429 budget_exhausted), `stopped` (an agent key of a frozen agent: 403
 * agent_stopped), `admin` (budgets, usage).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { call, csrf, signIn } from '../helpers/http.js';
import { BIN, cleanEnv, svc } from '../helpers/process.js';
import { startChild, type Child } from './children.js';

const OWNER = { email: 'bench@localhost', password: 'bench password 0123' };
export const VENDOR_ENV = { VENDOR_O_KEY: 'sk-mock-openai', VENDOR_A_KEY: 'sk-mock-anthropic' };

/** The model the benchmark asks for; the main key's profile and `x-svc-objective: cost` route to it. */
export const MODEL = 'small';
/** The embedding model of POST /v1/embeddings. */
export const EMBEDDING_MODEL = 'embed';

/** The largest requests or tokens per minute a limit may name: counted on every request, never reached. */
const MAX_PER_MINUTE = 1_000_000_000;
/** How long the `all` key's profile keeps a cached answer (expired entries are pruned as new ones are written). */
export const CACHE_TTL_SECONDS = 60;
/** The team (and principal) of the `all` key. */
export const ALL_TEAM = 'bench-all';

/** The gateway's configuration over the mock vendor (the soak and the growth measurement use it too). */
export function config(vendorUrl: string): unknown {
  const model = (
    id: string,
    provider: string,
    upstreamModel: string,
    inOut: [number, number],
    domicile: string,
    region: string,
  ) => ({
    id,
    provider,
    upstreamModel,
    priceMicrosPerMTokIn: inOut[0],
    priceMicrosPerMTokOut: inOut[1],
    quality: 1,
    latency: 1,
    jurisdiction: { domicile, region },
    taskClasses: ['*'],
  });
  return {
    gateway: {
      enforcement: 'enforce',
      providers: [
        { id: 'vendor-o', kind: 'openai', baseUrl: `${vendorUrl}/v1`, apiKeyEnv: 'VENDOR_O_KEY' },
        { id: 'vendor-a', kind: 'anthropic', baseUrl: vendorUrl, apiKeyEnv: 'VENDOR_A_KEY' },
      ],
      models: [
        model(MODEL, 'vendor-o', 'small-2026', [150_000, 600_000], 'US', 'us-east'),
        {
          ...model('large', 'vendor-o', 'large-2026', [3_000_000, 12_000_000], 'US', 'us-east'),
          quality: 3,
          latency: 2,
        },
        model('claude-eu', 'vendor-a', 'claude-eu-2026', [1_000_000, 5_000_000], 'EU', 'eu-west'),
        // Served only to POST /v1/embeddings (task class embedding).
        {
          ...model(EMBEDDING_MODEL, 'vendor-o', 'embed-2026', [20_000, 0], 'US', 'us-east'),
          taskClasses: ['embedding'],
        },
      ],
      policyProfiles: [
        { id: 'us-only', domiciles: ['US'], signOff: 'the CISO' },
        // The same, with requests and tokens per minute and the response cache (the `all` key).
        {
          id: 'us-only-all',
          domiciles: ['US'],
          signOff: 'the CISO',
          limits: { requestsPerMinute: MAX_PER_MINUTE, tokensPerMinute: MAX_PER_MINUTE },
          cache: { ttlSeconds: CACHE_TTL_SECONDS },
        },
        { id: 'eu-only', domiciles: ['EU'], signOff: 'the data protection officer' },
      ],
      // The `all` key's team has limits of its own too: two windows counted per request.
      limits: [
        {
          scope: { kind: 'team', id: ALL_TEAM },
          requestsPerMinute: MAX_PER_MINUTE,
          tokensPerMinute: MAX_PER_MINUTE,
        },
      ],
      highRiskTaskClasses: ['medical.*'],
      home: { domicile: 'EU' },
    },
  };
}

/** `svc ARGS --json`, parsed as what the caller says it prints; throws with the output when it exits non-zero. */
export async function cli<T>(args: string[], input?: string): Promise<T> {
  // A loaded machine can take a while to start the CLI and hash a password.
  const r = await svc([...args, '--json'], { timeoutMs: 120_000, ...(input === undefined ? {} : { input }) });
  if (r.code !== 0) throw new Error(`svc ${args.join(' ')} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return JSON.parse(r.stdout) as T;
}

export interface GatewayBench {
  server: Child<{ listening: string }>;
  workspaceId: string;
  /**
   * main: a task class and the `us-only` profile; all: the same with rate limits (its profile's and
   * its team's) and the response cache (profile `us-only-all`); spent: a used-up budget; stopped: a
   * stopped agent's.
   */
  keys: { main: string; all: string; spent: string; stopped: string; admin: string };
}

/**
 * The benchmark's `svc serve`, set up as its header says. BENCH_SVC_BIN: the `bin/run.js` of
 * another checkout's build to serve instead (to compare two builds on one fixture; the store is
 * made by this checkout's CLI).
 */
export async function startGatewayBench(
  dataDir: string,
  vendorUrl: string,
  nodeFlags: string[] = [],
): Promise<GatewayBench> {
  const store = ['--local', '--data-dir', dataDir];
  const { workspaceId } = await cli<{ workspaceId: string }>(
    ['init', '--data-dir', dataDir, '--workspace', 'Bench', '--owner-email', OWNER.email, '--owner-password-stdin'],
    OWNER.password,
  );
  const key = async (...flags: string[]) => (await cli<{ key: string }>(['keys', 'create', ...flags, ...store])).key;
  const main = await key(
    '--scope',
    'inference',
    '--name',
    'bench',
    '--principal',
    'bench',
    '--team',
    'bench',
    '--task-class',
    'general',
    '--policy-profile',
    'us-only',
  );
  const all = await key(
    '--scope',
    'inference',
    '--name',
    'bench-all',
    '--principal',
    ALL_TEAM,
    '--team',
    ALL_TEAM,
    '--task-class',
    'general',
    '--policy-profile',
    'us-only-all',
  );
  const spent = await key(
    '--scope',
    'inference',
    '--name',
    'spent',
    '--principal',
    'spender',
    '--team',
    'bench',
    '--task-class',
    'general',
    '--policy-profile',
    'us-only',
  );
  const admin = await key('--scope', 'admin', '--name', 'bench-admin');
  const agent = await cli<{ id: string }>(['agents', 'create', '--name', 'stopped-bot', ...store]);
  const stopped = await key('--scope', 'agent', '--agent', agent.id, '--task-class', 'general');
  await cli(['freeze', '--agent', agent.id, '--reason', 'benchmark: a stopped agent', ...store]);

  const configFile = join(dataDir, 'bench-config.json');
  await writeFile(configFile, JSON.stringify(config(vendorUrl)));
  const env = cleanEnv({ ...VENDOR_ENV, SVC_LOG_LEVEL: 'info' });
  const server = await startChild<{ listening: string }>(
    [
      ...nodeFlags,
      process.env.BENCH_SVC_BIN ?? BIN,
      'serve',
      '--json',
      '--data-dir',
      dataDir,
      '--port',
      '0',
      '--config',
      configFile,
    ],
    env,
  );
  try {
    const cookie = await signIn(server.url, OWNER.email, OWNER.password);
    const dlp = await call(server.url, 'PUT', `/api/w/${workspaceId}/gateway`, {
      headers: { ...csrf, cookie },
      json: { dataLoss: 'redact' },
    });
    if (dlp.status !== 200 || dlp.body.dataLoss !== 'redact' || dlp.body.enforcement !== 'enforce')
      throw new Error(`data-loss mode: ${dlp.status} ${dlp.text}`);

    const adminHeaders = { authorization: `Bearer ${admin}` };
    const budgets = [
      {
        scope: { kind: 'workspace', id: workspaceId },
        amountMicros: 1_000_000_000_000_000,
        period: 'month',
        ladder: [
          { at: 0.9, step: 'nudge' },
          { at: 1, step: 'block' },
        ],
      },
      {
        scope: { kind: 'principal', id: 'spender' },
        amountMicros: 1,
        period: 'month',
        ladder: [
          { at: 0.5, step: 'nudge' },
          { at: 1, step: 'block' },
        ],
      },
    ];
    for (const budget of budgets) {
      const made = await call(server.url, 'POST', '/v1/admin/budgets', { headers: adminHeaders, json: budget });
      if (made.status !== 201) throw new Error(`budget: ${made.status} ${made.text}`);
    }
    // One real call uses up the spender's budget of one micro-dollar.
    const spend = await call(server.url, 'POST', '/v1/chat/completions', {
      headers: { authorization: `Bearer ${spent}` },
      json: { model: MODEL, messages: [{ role: 'user', content: 'spend it' }] },
    });
    if (spend.status !== 200) throw new Error(`spending the small budget: ${spend.status} ${spend.text}`);
    return { server, workspaceId, keys: { main, all, spent, stopped, admin } };
  } catch (err) {
    await server.stop();
    throw err;
  }
}
