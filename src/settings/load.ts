import { readFileSync } from 'node:fs';
import { fileProblem } from '../errors/system.js';
import { readPackageFile } from '../lib/paths.js';
import { AWS_ENV, environment, settingsSchema, type AwsCredentials, type Settings } from './schema.js';

export type { Settings } from './schema.js';

export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

export interface LoadOptions {
  /** A config file (JSON) merged over config/default.json. */
  configFile?: string;
  /** Values from command-line flags, as dotted paths; they win over everything. */
  overrides?: Record<string, unknown>;
  /** The environment to read SVC_* from; defaults to process.env. */
  env?: NodeJS.ProcessEnv;
}

/** The shipped defaults, by their path in the package (the single executable carries a copy). */
const defaultFile = 'config/default.json';

/**
 * Loads the settings once: defaults < config/default.json < --config FILE < SVC_* < flags.
 * A bad value stops the start with a message naming the field.
 */
export function loadSettings(options: LoadOptions = {}): Readonly<Settings> {
  const env = options.env ?? process.env;
  const merged: Record<string, unknown> = {};
  deepMerge(merged, readJson(defaultFile, readPackageFile));
  if (options.configFile) deepMerge(merged, readJson(options.configFile));
  for (const { name, path, list } of environment) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    setPath(
      merged,
      path,
      list
        ? raw
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : raw,
    );
  }
  for (const [path, value] of Object.entries(options.overrides ?? {})) {
    if (value !== undefined) setPath(merged, path, value);
  }
  const { value, error } = settingsSchema.validate(merged);
  if (error) {
    const lines = error.details.map((detail) => `  ${detail.path.join('.')}: ${detail.message}`);
    throw new SettingsError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const settings = value as Settings;
  if (settings.masterKey && settings.masterKeyFile)
    throw new SettingsError(
      'invalid configuration:\n  masterKey: give the master key once, as SVC_MASTER_KEY or as SVC_MASTER_KEY_FILE, not both',
    );
  if (settings.env === 'production') checkProduction(settings);
  checkGateway(settings);
  // Upstream secrets come from the environment only, named by the config file.
  for (const provider of settings.gateway.providers) {
    provider.apiKey = provider.apiKeyEnv ? (env[provider.apiKeyEnv] ?? null) : null;
    if (provider.kind === 'bedrock') {
      provider.baseUrl ??= `https://bedrock-runtime.${provider.region}.amazonaws.com`;
      provider.aws = awsCredentials(env);
    }
  }
  // A local MCP server is given the variables its config names, and no other.
  for (const local of settings.mcp.localServers) {
    local.envValues = Object.fromEntries(
      local.env.flatMap((name) => (env[name] === undefined ? [] : [[name, env[name]]])),
    );
    local.searchPath = env.PATH ?? '';
  }
  return deepFreeze(settings);
}

/** The standard AWS environment variables (as the AWS SDKs read them); null unless both halves are set. */
function awsCredentials(env: Record<string, string | undefined>): AwsCredentials | null {
  const [idName, secretName, tokenName] = AWS_ENV;
  const accessKeyId = env[idName];
  const secretAccessKey = env[secretName];
  if (!accessKeyId || !secretAccessKey) return null;
  const sessionToken = env[tokenName];
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

/** The catalogue must hang together: every model names a known provider, every profile known models and providers. */
function checkGateway(settings: Settings): void {
  const { providers, models, policyProfiles } = settings.gateway;
  const providerIds = new Set(providers.map((p) => p.id));
  const modelIds = new Set(models.map((m) => m.id));
  const problems: string[] = [];
  models.forEach((m, i) => {
    // One shape for the rest of the code: every model has its deployments, the first also as provider and upstreamModel.
    const given = m.deployments !== undefined;
    if (!given) m.deployments = [{ provider: m.provider, upstreamModel: m.upstreamModel, weight: 1 }];
    m.provider = m.deployments[0]!.provider;
    m.upstreamModel = m.deployments[0]!.upstreamModel;
    m.deployments.forEach((d, j) => {
      const at = `gateway.models.${i}.${given ? `deployments.${j}.` : ''}provider`;
      const kind = providers.find((p) => p.id === d.provider)?.kind;
      if (kind === undefined) problems.push(`  ${at}: "${d.provider}" is not a configured provider`);
      // POST /v1/embeddings is a capability of the openai kind's adapter only (gateway/vendors/):
      // a model marked for embeddings on another kind would only ever fail, so it is refused here.
      else if (m.taskClasses?.includes('embedding') && kind !== 'openai')
        problems.push(
          `  ${at}: "${d.provider}" is of kind ${kind}, and embeddings are served through openai-kind providers (OpenAI and compatible) only`,
        );
    });
  });
  policyProfiles.forEach((p, i) => {
    for (const id of p.models ?? [])
      if (!modelIds.has(id)) problems.push(`  gateway.policyProfiles.${i}.models: "${id}" is not a configured model`);
    for (const id of p.providers ?? [])
      if (!providerIds.has(id))
        problems.push(`  gateway.policyProfiles.${i}.providers: "${id}" is not a configured provider`);
    for (const field of ['contextWindowFallbacks', 'contentPolicyFallbacks'] as const)
      for (const [from, to] of Object.entries(p[field] ?? {}))
        for (const id of from === '*' ? to : [from, ...to])
          if (!modelIds.has(id))
            problems.push(`  gateway.policyProfiles.${i}.${field}: "${id}" is not a configured model`);
  });
  if (problems.length > 0) throw new SettingsError(`invalid configuration:\n${problems.join('\n')}`);
}

/** Production refuses settings that are only safe on a developer's machine. */
function checkProduction(settings: Settings): void {
  const problems: string[] = [];
  if (!settings.baseUrl?.startsWith('https://')) {
    problems.push(
      '  baseUrl: production needs the public https address (SVC_BASE_URL=https://...): the session cookie is __Host-sid, which browsers only keep over https',
    );
  }
  if (problems.length > 0) throw new SettingsError(`invalid configuration for production:\n${problems.join('\n')}`);
}

function readJson(file: string, read = (path: string) => readFileSync(path, 'utf8')): Record<string, unknown> {
  let text: string;
  try {
    text = read(file);
  } catch (err) {
    throw new SettingsError(`cannot read config file ${file}: ${fileProblem(err)}`);
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new SettingsError(`config file ${file} must hold a JSON object`);
    }
    return parsed as Record<string, unknown>;
  } catch (err) {
    if (err instanceof SettingsError) throw err;
    // Position only: the parser's message quotes the file, which may hold secrets.
    const at = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new SettingsError(`config file ${file} is not valid JSON${at === undefined ? '' : ` (at character ${at})`}`);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') continue;
    const existing = target[key];
    if (isPlainObject(existing) && isPlainObject(value)) deepMerge(existing, value);
    else target[key] = isPlainObject(value) ? structuredClone(value) : value;
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    if (!isPlainObject(node[part])) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1]!] = value;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
