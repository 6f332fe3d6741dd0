import { readFile } from 'node:fs/promises';
import { fileProblem } from '../errors/system.js';
import type { PinView } from '../mcp/pins.js';
import { namedEnv } from '../settings/named-env.js';
import type { UpstreamProblem } from '../mcp/diagnosis.js';
import type { McpProxy } from '../mcp/proxy.js';
import { CliFailure, EXIT } from './base-command.js';
import { serverClient, type ServerClient } from './client.js';
import { resolveRemote } from './remote.js';
import { printable } from './printable.js';

/**
 * What `svc mcp servers …` and `svc mcp tools …` share: the answers of the /v1/admin/mcp-servers
 * routes, the add request made from flags or from an MCP Registry server.json, the choice of
 * what an approval approves, and each command's text.
 */
export type McpServerView = ReturnType<McpProxy['view']>;
export type McpServerAdded = Awaited<ReturnType<McpProxy['add']>>;
export type McpServerTest = McpServerView & {
  reachable: boolean;
  problem: UpstreamProblem | null;
  tools: { total: number; pending: number };
};
export interface McpToolList {
  data: PinView[];
  next: string | null;
  reachable: boolean;
  problem: UpstreamProblem | null;
}
export interface McpServerInput {
  name: string;
  url: string;
  secret?: string;
  allowTools?: string[];
}
/** A tool's pin, with its server's name. */
export type ServerTool = PinView & { server: string };

/** The client, with the service token these commands take, else the svc login sign-in (they have no --local form). */
export function mcpClient(flags: {
  url?: string | undefined;
  context?: string | undefined;
  token?: string | undefined;
}): ServerClient {
  const remote = resolveRemote(flags, flags.token);
  if (!remote.bearer)
    throw new CliFailure('no service token (set SVC_TOKEN or --token) and no svc login sign-in for this server', {
      exit: EXIT.usage,
      type: 'unauthenticated',
      fix: 'Sign in with svc login --url URL, or create a token with the mcp:read or mcp:write scope: svc tokens create --scope mcp:write ... --local (or in the console).',
    });
  return serverClient(remote.url, remote.bearer);
}

const usage = (message: string, fix?: string): never => {
  throw new CliFailure(message, { exit: EXIT.usage, type: 'usage', ...(fix ? { fix } : {}) });
};

/** The add request: NAME and URL, or --from a server.json (NAME and URL then override the file's). */
export async function addRequest(
  name: string | undefined,
  flags: { url?: string | undefined; from?: string | undefined; 'secret-env'?: string | undefined; allow?: string },
): Promise<McpServerInput> {
  let url = flags.url;
  let needsSecret = false;
  if (flags.from) {
    // joi loads only for a file.
    const { remoteFromServerJson } = await import('./mcp-registry.js');
    const file = flags.from;
    const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) =>
      usage(`cannot read ${file}: ${fileProblem(err)}`, 'Pass --from an MCP Registry server.json file.'),
    );
    const remote = remoteFromServerJson(text, file);
    name ??= remote.name;
    url ??=
      remote.url ??
      usage(`${flags.from}: the remote's URL has variables to fill in`, 'Pass NAME and the URL with them filled in.');
    needsSecret = remote.needsSecret;
  }
  if (!name || !url) return usage('name the server and its URL: svc mcp servers add NAME URL, or --from server.json');
  const secretEnv = flags['secret-env'];
  if (needsSecret && !secretEnv)
    usage(
      `${name} asks for a bearer token (an Authorization header)`,
      'Pass --secret-env VAR, naming the environment variable that holds the token.',
    );
  const secret = secretEnv === undefined ? undefined : namedEnv(secretEnv);
  if (secretEnv !== undefined && !secret)
    usage(`the environment variable ${secretEnv} is not set or empty`, `Set ${secretEnv} to the upstream's token.`);
  const allow = flags.allow?.split(',').map((x) => x.trim());
  if (allow?.some((x) => x === '')) usage('--allow takes tool names separated by commas: echo,add');
  return { name, url, ...(secret ? { secret } : {}), ...(allow ? { allowTools: allow } : {}) };
}

/** Every tool of the servers named (all of them when none is), and the servers that did not answer. */
export async function toolsOf(
  client: ServerClient,
  server: string | undefined,
): Promise<{ data: ServerTool[]; unreachable: string[] }> {
  const names = server ? [server] : (await client.mcp.servers()).map((s) => s.name);
  const data: ServerTool[] = [];
  const unreachable: string[] = [];
  for (const name of names) {
    const listed = await client.mcp.tools(name);
    if (!listed.reachable) unreachable.push(name);
    data.push(...listed.data.map((t) => ({ server: name, ...t })));
  }
  return { data, unreachable };
}

/**
 * Approves a tool's pending state: the hash given (what the person reviewed in `tools list`), or
 * else the one listed now. With `callsPerMinute` (null: none) the tool's per-agent limit is set
 * too, or alone on a tool already approved. A tool already approved, with no limit to set, is left
 * as it is.
 */
export async function approve(
  client: ServerClient,
  target: { server: string; tool: string },
  options: { hash?: string | undefined; callsPerMinute?: number | null | undefined },
): Promise<{ approved: boolean; pin: PinView }> {
  const { server, tool } = target;
  const limit = options.callsPerMinute === undefined ? {} : { callsPerMinute: options.callsPerMinute };
  const send = async (hash: string) => ({ approved: true, pin: await client.mcp.approve(server, tool, hash, limit) });
  if (options.hash) return send(options.hash);
  const pin = (await client.mcp.tools(server)).data.find((t) => t.tool === tool);
  if (!pin)
    throw new CliFailure(`${server} has no tool ${tool}`, {
      exit: EXIT.false,
      type: 'not_found',
      fix: `List its tools: svc mcp tools list ${server}`,
    });
  if (pin.changed) return send(pin.changed.hash);
  if (pin.approved && options.callsPerMinute !== undefined) return send(pin.approved.hash);
  return { approved: false, pin };
}

/** --calls-per-minute: a whole number from 1 to 1000000, or `none` (no limit); absent: unchanged. */
export function callsPerMinuteOf(raw: string | undefined): number | null | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'none') return null;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000)
    usage(`--calls-per-minute takes a whole number from 1 to 1000000, or none: ${raw}`);
  return n;
}

/** The hash an approval would take (pending), else the approved one. */
const hashOf = (t: PinView) => (t.changed ?? t.approved)?.hash ?? '';

export const problemText = (p: UpstreamProblem): string => printable(`${p.message}${p.body ? `: ${p.body}` : ''}`);

/** Where a server is: its URL, or the configuration file for a local (stdio) server. */
const whereOf = (s: { kind?: string; url?: string }): string =>
  'url' in s && s.url ? s.url : 'local, from the configuration file';

export const serverLine = (s: McpServerView): string =>
  `${s.name}  ${whereOf(s)}${s.enabled === false ? '  (disabled)' : ''}${s.hasSecret ? '  (secret)' : ''}` +
  `${s.allowTools ? `  allow: ${printable(s.allowTools.join(','))}` : ''}`;

export function addedText(a: McpServerAdded): string[] {
  if (a.pinnedTools === null)
    return [
      `Added ${a.name} (${a.url}), but it could not be listed${a.problem ? `: ${problemText(a.problem)}` : ''}.`,
      `Its tools are withheld until each is approved: svc mcp servers test ${a.name}, then svc mcp tools list ${a.name}.`,
    ];
  const pinned = a.pinnedTools.map(printable).join(', ');
  return [`Added ${a.name} (${a.url}): ${a.pinnedTools.length} tool(s) pinned: ${pinned}`];
}

export function testText(r: McpServerTest): string {
  if (!r.reachable)
    return `${r.name} (${whereOf(r)}) cannot be used: ${r.problem ? problemText(r.problem) : 'no answer'}`;
  return `${r.name} (${whereOf(r)}) answers: ${r.tools.total} tool(s), ${r.tools.pending} waiting for approval`;
}

export function toolLines(r: { data: ServerTool[]; unreachable: string[] }): string[] {
  return [
    ...r.data.map((t) => `${t.server}  ${printable(t.tool)}  ${t.status.padEnd(8)}  ${hashOf(t)}`),
    ...r.unreachable.map((s) => `${s}: not reachable now (pins shown as last seen)`),
  ];
}
