import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT, cleanEnv, removeDir } from './process.js';

/**
 * The real coding agents, run against a gateway: Claude Code (`@anthropic-ai/claude-code`) and
 * the Codex CLI (`@openai/codex`), each with its default configuration and only the settings an
 * operator gives it to reach the gateway (docs/gateway.md says which). Their packages come from
 * the project's devDependencies (node_modules), or from a separate install prefix `.agents/`
 * (`npm install --prefix .agents --no-save @anthropic-ai/claude-code @openai/codex`) that leaves
 * the shared node_modules alone. Each run gets a temp HOME, so nothing of the machine's own
 * settings or sessions is read, and telemetry, error reports and update checks are off.
 */

const PREFIXES = [join(ROOT, 'node_modules'), join(ROOT, '.agents', 'node_modules')];

function find(relative: string): string {
  for (const prefix of PREFIXES) {
    const path = join(prefix, relative);
    if (existsSync(path)) return path;
  }
  throw new Error(
    `${relative} is not installed: npm install (devDependencies), or npm install --prefix .agents --no-save the agent`,
  );
}

/**
 * Claude Code's executable: the native binary of this platform's package (an optional dependency
 * of @anthropic-ai/claude-code), which its install script also copies over the package's
 * bin/claude.exe placeholder; so it is found when install scripts did not run, too.
 */
export function claudeBin(): string {
  const platform = `@anthropic-ai/claude-code-${process.platform}-${process.arch}/claude`;
  try {
    return find(platform);
  } catch {
    return find('@anthropic-ai/claude-code/bin/claude.exe');
  }
}
/** The Codex CLI's launcher (a Node script that starts the native binary of this platform). */
export const codexBin = (): string => find('@openai/codex/bin/codex.js');

export interface AgentRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number) {
  return new Promise<AgentRun>((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * A temp working folder with these files, and a temp HOME; removed by `clean`. Under
 * test/artifacts/ (not in git), not the system's temp folder: Codex refuses to set up its sandbox's
 * helper under a temp folder, and its shell commands then fail.
 */
export async function agentDirs(files: Record<string, string>) {
  const parent = join(ROOT, 'test', 'artifacts', 'agents');
  await mkdir(parent, { recursive: true });
  const root = await mkdtemp(join(parent, 'run-'));
  const home = join(root, 'home');
  const cwd = join(root, 'work');
  await mkdir(home, { recursive: true });
  await mkdir(cwd, { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(join(cwd, name), text);
  return { root, home, cwd, clean: () => removeDir(root) };
}

/** Claude Code in print mode (`-p`): one prompt, the answer on stdout, at the gateway with an svc key. */
export function claudeCode(
  gateway: string,
  key: string,
  prompt: string,
  dirs: { home: string; cwd: string },
): Promise<AgentRun> {
  const env = cleanEnv({
    HOME: dirs.home,
    ANTHROPIC_BASE_URL: gateway,
    ANTHROPIC_API_KEY: key,
    ANTHROPIC_AUTH_TOKEN: undefined,
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  });
  delete env.ANTHROPIC_AUTH_TOKEN;
  delete env.ANTHROPIC_MODEL;
  return run(claudeBin(), ['-p', prompt, '--output-format', 'text'], dirs.cwd, env, 50_000);
}

/**
 * `codex exec` with one prompt, its config.toml (in a temp CODEX_HOME) declaring the gateway as
 * a custom model provider that speaks Responses, the svc key in SVC_API_KEY, analytics off. The
 * working folder is made a git repository, as codex asks of the folder it works in.
 */
export async function codex(
  gateway: string,
  key: string,
  prompt: string,
  dirs: { home: string; cwd: string },
): Promise<AgentRun> {
  const codexHome = join(dirs.home, '.codex');
  await mkdir(codexHome, { recursive: true });
  await writeFile(join(codexHome, 'config.toml'), codexConfig(gateway));
  await run('git', ['init', '-q'], dirs.cwd, cleanEnv({ HOME: dirs.home }), 10_000);
  const env = cleanEnv({ HOME: dirs.home, CODEX_HOME: codexHome, SVC_API_KEY: key });
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  return run(process.execPath, [codexBin(), 'exec', prompt], dirs.cwd, env, 50_000);
}

/** The config.toml an operator gives Codex to reach the gateway (docs/gateway.md). */
export const codexConfig = (gateway: string): string => `model_provider = "svc"

[model_providers.svc]
name = "svc"
base_url = "${gateway}/v1"
env_key = "SVC_API_KEY"
wire_api = "responses"

[analytics]
enabled = false
`;
