import test from 'ava';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { walk } from '../../src/settings/define.js';
import { loadSettings, SettingsError } from '../../src/settings/load.js';
import { declarations } from '../../src/settings/schema.js';
import { removeDir, tempDir } from '../helpers/process.js';

test('defaults come from config/default.json and the schema', (t) => {
  const s = loadSettings({ env: {} });
  t.is(s.server.host, '127.0.0.1');
  t.is(s.server.port, 8080);
  t.is(s.dataDir, './data');
  t.is(s.limits.bodyBytes, 1048576);
  t.is(s.env, 'development');
  t.true(s.baseUrl === null, 'no base URL configured: derived from the bound address');
});

test('precedence: flags over SVC_* over the config file over defaults', async (t) => {
  const dir = await tempDir();
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify({ server: { port: 9001, host: '0.0.0.0' }, log: { level: 'debug' } }));
  const fromFile = loadSettings({ env: {}, configFile: file });
  t.is(fromFile.server.port, 9001);
  t.is(fromFile.server.host, '0.0.0.0');
  const fromEnv = loadSettings({ env: { SVC_PORT: '9002' }, configFile: file });
  t.is(fromEnv.server.port, 9002);
  t.is(fromEnv.log.level, 'debug');
  const fromFlag = loadSettings({ env: { SVC_PORT: '9002' }, configFile: file, overrides: { 'server.port': 9003 } });
  t.is(fromFlag.server.port, 9003);
  await removeDir(dir);
});

test('a bad value stops the load with a message naming the field', (t) => {
  const err = t.throws(() => loadSettings({ env: { SVC_PORT: 'eighty' } }), { instanceOf: SettingsError });
  t.regex(err!.message, /server\.port/);
  const err2 = t.throws(() => loadSettings({ env: { SVC_LOG_LEVEL: 'loud' } }), { instanceOf: SettingsError });
  t.regex(err2!.message, /log\.level/);
});

test('an unknown key in a config file is refused, naming it', async (t) => {
  const dir = await tempDir();
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify({ server: { prot: 1 } }));
  const err = t.throws(() => loadSettings({ env: {}, configFile: file }), { instanceOf: SettingsError });
  t.regex(err!.message, /server\.prot/);
  await removeDir(dir);
});

test('a config file that is not JSON, or missing, is named in the error', async (t) => {
  const dir = await tempDir();
  const file = join(dir, 'config.json');
  await writeFile(file, '{ nope');
  t.throws(() => loadSettings({ env: {}, configFile: file }), { instanceOf: SettingsError, message: /not valid JSON/ });
  t.throws(() => loadSettings({ env: {}, configFile: join(dir, 'missing.json') }), {
    instanceOf: SettingsError,
    message: /cannot read config file/,
  });
  await removeDir(dir);
});

test('production refuses a deployment without an https base URL', (t) => {
  t.throws(() => loadSettings({ env: { NODE_ENV: 'production' } }), { instanceOf: SettingsError, message: /baseUrl/ });
  t.throws(() => loadSettings({ env: { NODE_ENV: 'production', SVC_BASE_URL: 'http://svc.example' } }), {
    instanceOf: SettingsError,
    message: /https/,
  });
  const ok = loadSettings({ env: { NODE_ENV: 'production', SVC_BASE_URL: 'https://svc.example' } });
  t.is(ok.baseUrl, 'https://svc.example');
});

test('settings are frozen once loaded', (t) => {
  const s = loadSettings({ env: {} });
  t.true(Object.isFrozen(s));
  t.true(Object.isFrozen(s.server));
});

test('gateway providers and models are validated in the documented error shape', (t) => {
  t.throws(
    () =>
      loadSettings({
        env: {},
        overrides: {
          gateway: {
            enforcement: 'enforce',
            providers: [{ id: 'a', kind: 'gopher', baseUrl: 'http://127.0.0.1:9/v1' }],
            models: [],
          },
        },
      }),
    { instanceOf: SettingsError, message: /gateway\.providers\.0\.kind/ },
  );
});

test('a config file that is not JSON is reported by position, never quoting its content', async (t) => {
  const dir = await tempDir();
  const file = join(dir, 'config.json');
  await writeFile(file, '{ "masterKey": c2VjcmV0LXNlY3JldC1zZWNyZXQ }');
  const err = t.throws(() => loadSettings({ env: {}, configFile: file }), { instanceOf: SettingsError });
  t.regex(err!.message, /not valid JSON/);
  t.false(err!.message.includes('c2VjcmV0'), 'no part of the file appears in the message');
  await removeDir(dir);
});

test('trusted proxies must be addresses or CIDR ranges', (t) => {
  t.throws(() => loadSettings({ env: { SVC_TRUSTED_PROXIES: '127.0.0.1,bogus' } }), {
    instanceOf: SettingsError,
    message: /server\.trustedProxies\.1/,
  });
  t.deepEqual(loadSettings({ env: { SVC_TRUSTED_PROXIES: '10.0.0.0/8, ::1' } }).server.trustedProxies, [
    '10.0.0.0/8',
    '::1',
  ]);
});

const MODEL = {
  id: 'small',
  provider: 'vendor-a',
  upstreamModel: 'small-1',
  priceMicrosPerMTokIn: 1,
  priceMicrosPerMTokOut: 2,
  jurisdiction: { domicile: 'US', region: 'us-east' },
};
const PROVIDER = { id: 'vendor-a', kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: 'VENDOR_A_KEY' };

test('the gateway catalogue must hang together: unknown providers and models are named', (t) => {
  const err = t.throws(
    () =>
      loadSettings({
        env: {},
        overrides: {
          'gateway.providers': [PROVIDER],
          'gateway.models': [{ ...MODEL, provider: 'vendor-z' }],
          'gateway.policyProfiles': [{ id: 'p', models: ['ghost'], providers: ['nobody'] }],
        },
      }),
    { instanceOf: SettingsError },
  );
  t.regex(err!.message, /gateway\.models\.0\.provider: "vendor-z" is not a configured provider/);
  t.regex(err!.message, /gateway\.policyProfiles\.0\.models: "ghost" is not a configured model/);
  t.regex(err!.message, /gateway\.policyProfiles\.0\.providers: "nobody" is not a configured provider/);
});

test('an upstream secret comes from the environment variable the config names, never from the file', (t) => {
  const settings = loadSettings({
    env: { VENDOR_A_KEY: 'sk-from-env' },
    overrides: { 'gateway.providers': [PROVIDER], 'gateway.models': [MODEL] },
  });
  t.is(settings.gateway.providers[0]!.apiKey, 'sk-from-env');
  const inFile = t.throws(
    () =>
      loadSettings({
        env: {},
        overrides: { 'gateway.providers': [{ ...PROVIDER, apiKey: 'sk-in-file' }], 'gateway.models': [MODEL] },
      }),
    { instanceOf: SettingsError },
  );
  t.regex(inFile!.message, /apiKey.*may not be in a config file/);
  t.false(inFile!.message.includes('sk-in-file'), 'the secret is not repeated');
  const unset = loadSettings({ env: {}, overrides: { 'gateway.providers': [PROVIDER], 'gateway.models': [MODEL] } });
  t.is(unset.gateway.providers[0]!.apiKey, null);
  t.like(unset.gateway, { enforcement: 'shadow', dataLoss: 'off', breaker: { failures: 5, cooldownMs: 30000 } });
});

test("the operator's billing secrets come from SVC_BILLING_STRIPE_*; none by default; a blank-containing one is refused", (t) => {
  t.deepEqual(
    { ...loadSettings({ env: {} }).billing },
    { stripeSigningSecret: null, stripePreviousSigningSecret: null },
  );
  const s = loadSettings({
    env: {
      SVC_BILLING_STRIPE_SIGNING_SECRET: 'whsec_operator_new',
      SVC_BILLING_STRIPE_PREVIOUS_SIGNING_SECRET: 'whsec_operator_old',
    },
  });
  t.deepEqual(
    { ...s.billing },
    { stripeSigningSecret: 'whsec_operator_new', stripePreviousSigningSecret: 'whsec_operator_old' },
  );
  const err = t.throws(() => loadSettings({ env: { SVC_BILLING_STRIPE_SIGNING_SECRET: 'whsec with space' } }), {
    instanceOf: SettingsError,
  });
  t.regex(err!.message, /billing\.stripeSigningSecret/);
  t.false(err!.message.includes('whsec with space'), 'the secret is not quoted back');
});

test('retention: 90 days by default, set by SVC_RETENTION_DAYS; under a week (shorter than providers retry) is refused', (t) => {
  const s = loadSettings({ env: {} });
  t.deepEqual(s.retention, { days: 90, sweepIntervalMs: 300_000, sweepBatch: 500, sweepMaxPerRun: 100_000 });
  t.is(loadSettings({ env: { SVC_RETENTION_DAYS: '30' } }).retention.days, 30);
  t.is(loadSettings({ env: { SVC_RETENTION_SWEEP_INTERVAL_MS: '5000' } }).retention.sweepIntervalMs, 5000);
  const err = t.throws(() => loadSettings({ env: { SVC_RETENTION_DAYS: '3' } }), { instanceOf: SettingsError });
  t.regex(err!.message, /retention\.days.*greater than or equal to 7/);
  const batch = t.throws(() => loadSettings({ env: {}, overrides: { 'retention.sweepBatch': 0 } }), {
    instanceOf: SettingsError,
  });
  t.regex(batch!.message, /retention\.sweepBatch/);
});

test('MCP upstreams on private addresses: off by default, on with SVC_MCP_ALLOW_PRIVATE_UPSTREAMS=1', (t) => {
  t.false(loadSettings({ env: {} }).mcp.allowPrivateUpstreams);
  t.true(loadSettings({ env: { SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1' } }).mcp.allowPrivateUpstreams);
  t.false(
    loadSettings({ env: { SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1' } }).mcp.allowPrivateUpstreams,
    "the webhooks' setting does not open the MCP proxy",
  );
});

test('mcp.allowedOrigins: none by default; SVC_MCP_ALLOWED_ORIGINS is a comma list of exact origins', (t) => {
  t.deepEqual(loadSettings({ env: {} }).mcp.allowedOrigins, []);
  t.deepEqual(
    loadSettings({ env: { SVC_MCP_ALLOWED_ORIGINS: 'https://app.example, http://localhost:5173' } }).mcp.allowedOrigins,
    ['https://app.example', 'http://localhost:5173'],
  );
  for (const bad of ['https://app.example/', 'https://app.example/mcp', 'app.example', '*', 'null'])
    t.throws(() => loadSettings({ env: { SVC_MCP_ALLOWED_ORIGINS: bad } }), {
      instanceOf: SettingsError,
      message: /mcp\.allowedOrigins.*must be an origin/,
    });
});

test('OAuth: private client metadata off by default, a 5 s fetch limit and a 10 s refresh grace; SVC_OAUTH_* set them', (t) => {
  t.deepEqual(loadSettings({ env: {} }).oauth, {
    allowPrivateClientMetadata: false,
    clientMetadataTimeoutMs: 5000,
    refreshGraceSeconds: 10,
    deviceCodeTtlSeconds: 600,
    devicePollIntervalSeconds: 5,
    personAccessTtlSeconds: 3600,
    personRefreshTtlDays: 30,
  });
  t.deepEqual(
    loadSettings({
      env: {
        SVC_OAUTH_ALLOW_PRIVATE_CLIENT_METADATA: '1',
        SVC_OAUTH_CLIENT_METADATA_TIMEOUT_MS: '300',
        SVC_OAUTH_REFRESH_GRACE_SECONDS: '0',
        SVC_OAUTH_DEVICE_CODE_TTL_SECONDS: '120',
        SVC_OAUTH_DEVICE_POLL_INTERVAL_SECONDS: '2',
        SVC_OAUTH_PERSON_ACCESS_TTL_SECONDS: '900',
        SVC_OAUTH_PERSON_REFRESH_TTL_DAYS: '7',
      },
    }).oauth,
    {
      allowPrivateClientMetadata: true,
      clientMetadataTimeoutMs: 300,
      refreshGraceSeconds: 0,
      deviceCodeTtlSeconds: 120,
      devicePollIntervalSeconds: 2,
      personAccessTtlSeconds: 900,
      personRefreshTtlDays: 7,
    },
  );
  for (const [name, bad] of [
    ['SVC_OAUTH_DEVICE_POLL_INTERVAL_SECONDS', '0'],
    ['SVC_OAUTH_PERSON_REFRESH_TTL_DAYS', '91'],
  ] as const)
    t.throws(() => loadSettings({ env: { [name]: bad } }), { instanceOf: SettingsError });
  t.false(
    loadSettings({ env: { SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1', SVC_WEBHOOKS_ALLOW_PRIVATE_TARGETS: '1' } }).oauth
      .allowPrivateClientMetadata,
    'neither the MCP nor the webhooks setting opens client metadata fetches',
  );
  const err = t.throws(() => loadSettings({ env: { SVC_OAUTH_REFRESH_GRACE_SECONDS: '3600' } }), {
    instanceOf: SettingsError,
  });
  t.regex(err!.message, /oauth\.refreshGraceSeconds/);
});

test('vendor kinds: azure-openai needs apiVersion, bedrock a region (its endpoint by default) and its credentials from the AWS variables', (t) => {
  const load = (provider: Record<string, unknown>, env: Record<string, string> = {}) =>
    loadSettings({
      env,
      overrides: { 'gateway.providers': [{ id: 'vendor-a', ...provider }], 'gateway.models': [MODEL] },
    });
  t.throws(() => load({ kind: 'azure-openai', baseUrl: 'https://r.openai.azure.com' }), {
    instanceOf: SettingsError,
    message: /gateway\.providers\.0\.apiVersion.*required/,
  });
  t.throws(() => load({ kind: 'openai', baseUrl: 'https://x.test/v1', region: 'us-east-1' }), {
    instanceOf: SettingsError,
    message: /gateway\.providers\.0\.region/,
  });
  t.throws(() => load({ kind: 'bedrock' }), {
    instanceOf: SettingsError,
    message: /gateway\.providers\.0\.region.*required/,
  });
  t.throws(() => load({ kind: 'gemini' }), {
    instanceOf: SettingsError,
    message: /gateway\.providers\.0\.baseUrl.*required/,
  });
  t.like(
    load({ kind: 'azure-openai', baseUrl: 'https://r.openai.azure.com', apiVersion: '2024-10-21' }).gateway
      .providers[0],
    {
      apiVersion: '2024-10-21',
    },
  );

  const bedrock = load(
    { kind: 'bedrock', region: 'eu-central-1' },
    { AWS_ACCESS_KEY_ID: 'AKIA1', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'token' },
  ).gateway.providers[0]!;
  t.is(bedrock.baseUrl, 'https://bedrock-runtime.eu-central-1.amazonaws.com');
  t.deepEqual(bedrock.aws, { accessKeyId: 'AKIA1', secretAccessKey: 'secret', sessionToken: 'token' });
  t.is(
    load({ kind: 'bedrock', region: 'eu-central-1' }, { AWS_ACCESS_KEY_ID: 'AKIA1' }).gateway.providers[0]!.aws,
    null,
  );
  t.is(
    load({ kind: 'bedrock', region: 'us-east-1', baseUrl: 'http://127.0.0.1:9' }).gateway.providers[0]!.baseUrl,
    'http://127.0.0.1:9',
  );
});

const { id: _id, provider: _provider, upstreamModel: _upstream, ...PRICED } = MODEL;

test('a model marked for embeddings on a provider kind that serves none is a configuration error naming the field', (t) => {
  const providers = [
    { id: 'oa', kind: 'openai', baseUrl: 'https://api.openai.example/v1' },
    { id: 'gm', kind: 'gemini', baseUrl: 'https://gemini.example' },
  ];
  const load = (model: Record<string, unknown>) =>
    loadSettings({
      env: {},
      overrides: { 'gateway.providers': providers, 'gateway.models': [{ ...PRICED, ...model }] },
    });
  const embed = { id: 'embed', upstreamModel: 'text-embedding-3-small', taskClasses: ['embedding'] };
  t.deepEqual(load({ ...embed, provider: 'oa' }).gateway.models[0]!.taskClasses, ['embedding']);
  const err = t.throws(() => load({ ...embed, provider: 'gm' }), { instanceOf: SettingsError });
  t.regex(err!.message, /gateway\.models\.0\.provider: "gm" is of kind gemini, and embeddings are served/);
  const deployed = t.throws(
    () =>
      load({
        id: 'embed',
        taskClasses: ['embedding'],
        deployments: [
          { provider: 'oa', upstreamModel: 'e-1' },
          { provider: 'gm', upstreamModel: 'e-2' },
        ],
      }),
    { instanceOf: SettingsError },
  );
  t.regex(deployed!.message, /gateway\.models\.0\.deployments\.1\.provider: "gm" is of kind gemini/);
  // A chat model on the same provider is fine.
  t.is(load({ id: 'chat', provider: 'gm', upstreamModel: 'gemini-2.5-flash' }).gateway.models[0]!.provider, 'gm');
});

test('config/default.json repeats the declared defaults and nothing else, so the two cannot disagree', async (t) => {
  const shipped = JSON.parse(await readFile(new URL('../../config/default.json', import.meta.url), 'utf8')) as object;
  const declared = new Map(walk(declarations).map(({ path, setting }) => [path, setting]));
  const leaves = (node: object, prefix: string): Array<[string, unknown]> =>
    Object.entries(node).flatMap(([key, value]) => {
      const path = prefix === '' ? key : `${prefix}.${key}`;
      return value !== null && typeof value === 'object' && !Array.isArray(value)
        ? leaves(value as object, path)
        : [[path, value] as [string, unknown]];
    });
  const disagreeing = leaves(shipped, '').flatMap(([path, value]) => {
    const setting = declared.get(path);
    if (!setting) return [`${path}: no such setting`];
    const fallback = (setting.schema.describe() as { flags?: { default?: unknown } }).flags?.default;
    return JSON.stringify(fallback) === JSON.stringify(value)
      ? []
      : [`${path}: ${JSON.stringify(value)} against ${JSON.stringify(fallback)}`];
  });
  t.deepEqual(disagreeing, []);
  t.true(leaves(shipped, '').length > 10);
});
