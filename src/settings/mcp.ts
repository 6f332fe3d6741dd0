import { bool, group, int, list, loaded, object, oneOf, string, type ValueOf } from './define.js';

/** The MCP proxy's settings (`mcp.*`): its upstreams' reach, deadlines and caps, and its local servers. */

/** A stdio MCP server declared in the config file; never named by the API. */
const localServer = object({
  /** Its name among a workspace's MCP servers. */
  id: string({
    required: true,
    joi: (s) => s.pattern(/^[A-Za-z0-9_-]{1,64}$/),
    doc: "its name among the workspace's MCP servers",
  }),
  command: string({
    min: 1,
    max: 4096,
    required: true,
    doc: 'an absolute path, or a name looked up on `PATH` at start',
  }),
  args: list(string({ max: 4096 }), { max: 256, default: [] }),
  /** Names of the environment variables passed to it; nothing else of svc's environment is. */
  env: list(string({ joi: (s) => s.pattern(/^[A-Za-z_][A-Za-z0-9_]*$/) }), {
    max: 256,
    default: [],
    doc: "names of the environment variables passed to it (their values read from svc's environment); nothing else of svc's environment is",
  }),
  sandbox: oneOf(['none', 'bwrap'], {
    default: 'none',
    doc: '`bwrap`: the process runs in bubblewrap with no network (unless `network`) and a read-only root; bwrap missing or unable to sandbox stops the start (exit 2)',
  }),
  network: bool({ default: false, doc: '`bwrap` only: the process keeps the network' }),
  /** The workspaces it appears in; null: all. */
  workspaces: list(string({ max: 128 }), {
    min: 1,
    nullable: true,
    default: null,
    shown: 'all',
    doc: 'the workspaces it appears in',
  }),
  memoryMb: int({
    min: 64,
    max: 1_048_576,
    default: 2048,
    doc: "one process's address space (`RLIMIT_AS`, through `prlimit`)",
  }),
  maxProcesses: int({
    min: 1,
    max: 10_000,
    default: 16,
    doc: "the server's processes running at once, over all sessions and workspaces",
  }),
  /** The values of `env`, read from svc's environment at load (an unset name is left out). */
  envValues: loaded<Record<string, string>>({
    present: true,
    message: '{{#label}} may not be in a config file: name the variables in env',
  }),
  /** svc's PATH at load, where a command named without a folder is looked up. */
  searchPath: loaded<string>({ present: true }),
});
export type LocalServerSettings = ValueOf<typeof localServer>;

export const mcp = group({
  allowPrivateUpstreams: bool({
    default: false,
    env: 'SVC_MCP_ALLOW_PRIVATE_UPSTREAMS',
    doc: 'the MCP proxy may reach upstream servers on loopback and private addresses (link-local never)',
  }),
  // The upstream sessions' deadlines and caps.
  upstreamTimeoutMs: int({
    min: 100,
    max: 120_000,
    default: 5_000,
    env: 'SVC_MCP_UPSTREAM_TIMEOUT_MS',
    doc: 'deadline of an upstream MCP server opening a session, listing its tools, and answering when it is added ([Deadlines](mcp-oauth.md#upstream-sessions-and-deadlines))',
  }),
  upstreamCallTimeoutMs: int({
    min: 100,
    max: 3_600_000,
    default: 60_000,
    env: 'SVC_MCP_UPSTREAM_CALL_TIMEOUT_MS',
    doc: 'deadline of one proxied tool call (counted again from each progress); past it the upstream is sent `notifications/cancelled`',
  }),
  upstreamSessionsPerAgent: int({
    min: 1,
    max: 100_000,
    default: 64,
    env: 'SVC_MCP_UPSTREAM_SESSIONS_PER_AGENT',
    doc: 'upstream MCP sessions one agent may have open at once, over all its sessions and upstreams',
  }),
  upstreamSessionsPerServer: int({
    min: 1,
    max: 1_000_000,
    default: 1_000,
    env: 'SVC_MCP_UPSTREAM_SESSIONS_PER_SERVER',
    doc: 'upstream MCP sessions open at once to one upstream server, over all agents',
  }),
  upstreamIdleMs: int({
    min: 100,
    max: 86_400_000,
    default: 300_000,
    env: 'SVC_MCP_UPSTREAM_IDLE_MS',
    doc: "an agent's upstream MCP session used without a session of its own ends after this long unused",
  }),
  allowedOrigins: list(
    string({
      joi: (s) =>
        s
          .custom((value: string) => {
            const url = new URL(value);
            if (url.origin !== value || url.origin === 'null') throw new Error('not an origin');
            return value;
          })
          .messages({ 'any.custom': '{{#label}} must be an origin: scheme://host[:port], nothing after it' }),
    }),
    {
      default: [],
      env: 'SVC_MCP_ALLOWED_ORIGINS',
      doc: 'web origins (`scheme://host[:port]`, exactly as a browser sends `Origin`) whose pages may call `/mcp`: CORS for them ([Browser clients](mcp-oauth.md#browser-clients)); every other origin is still refused `403`',
    },
  ),
  localServers: list(localServer, {
    joi: (s) => s.unique('id').max(256),
    default: [],
    doc: 'stdio MCP servers svc runs itself, one process per upstream session: each `{ id, command, args?, env?, sandbox?, network?, workspaces?, memoryMb?, maxProcesses? }` (config file only; `env` names the variables passed, never their values); see [Local servers](mcp-oauth.md#local-servers)',
  }),
});
