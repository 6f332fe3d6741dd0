import Joi from 'joi';
import { CliFailure, EXIT } from './base-command.js';
import { printable } from './printable.js';

/**
 * An MCP Registry `server.json` (the registry's server.schema.json), read for `svc mcp servers
 * add --from FILE`: no network lookup, only the file. What svc can add is a remote server that
 * speaks Streamable HTTP, reached with at most a bearer token:
 * - the first `remotes` entry of type `streamable-http` gives the upstream URL (an `sse`-only
 *   server is refused: svc connects to upstreams over Streamable HTTP);
 * - a URL with `{variables}` needs the URL given with them filled in;
 * - an `Authorization` header is the bearer secret (`--secret-env`); any other required header is
 *   refused by name, since svc sends an upstream no other header;
 * - a server with only `packages` (a local server: npm, pypi, oci, ... run over stdio) is refused
 *   by name: local servers are the operator's, declared in the configuration file.
 * A file that is not such a document is a usage error naming what is wrong, never a crash.
 * A registry API answer (`{ "server": {...}, "_meta": {...} }`) is read as its `server`.
 */
export interface RegistryRemote {
  /** The registry's name of the server (io.github.owner/name). */
  registryName: string;
  /** A name svc accepts, derived from the registry's name (its last part). */
  name: string;
  /** The upstream URL; null when it holds variables to fill in. */
  url: string | null;
  /** The remote asks for an Authorization header (a bearer token). */
  needsSecret: boolean;
}

/** The largest file read (a server.json is a few kilobytes). */
export const MAX_SERVER_JSON = 1_000_000;

const header = Joi.object({
  name: Joi.string().min(1).max(256).required(),
  value: Joi.string().allow('').max(4096),
  isRequired: Joi.boolean(),
  isSecret: Joi.boolean(),
}).unknown(true);

const remote = Joi.object({
  type: Joi.string().max(64).required(),
  url: Joi.string().min(1).max(2048).required(),
  headers: Joi.array().items(header).max(100),
}).unknown(true);

const pkg = Joi.object({
  registryType: Joi.string().max(64).required(),
  identifier: Joi.string().max(512).required(),
  version: Joi.string().max(256),
  transport: Joi.object({ type: Joi.string().max(64).required() }).unknown(true),
}).unknown(true);

const serverJson = Joi.object({
  $schema: Joi.string().max(2048),
  name: Joi.string().min(1).max(200).required(),
  version: Joi.string().max(256),
  remotes: Joi.array().items(remote).max(100),
  packages: Joi.array().items(pkg).max(100),
}).unknown(true);

type Header = { name: string; value?: string; isRequired?: boolean; isSecret?: boolean };
type ServerJson = {
  name: string;
  remotes?: Array<{ type: string; url: string; headers?: Header[] }>;
  packages?: Array<{ registryType: string; identifier: string; version?: string; transport?: { type: string } }>;
};

const LOCAL_FIX =
  "Local (stdio) servers are declared by the operator in svc's configuration file, not added through the API; or serve it over Streamable HTTP and add that URL.";

function refuse(source: string, said: string, fix: string, field = 'server.json'): never {
  // The file's own words (its name, a package's) may hold anything: shown printable.
  const message = printable(said);
  throw new CliFailure(`${source}: ${message}`, {
    exit: EXIT.usage,
    type: 'invalid_request',
    fix,
    details: { errors: [{ field, message }] },
  });
}

/** The remote server a server.json describes, or a usage error saying why it cannot be added. */
export function remoteFromServerJson(text: string, source: string): RegistryRemote {
  if (text.length > MAX_SERVER_JSON)
    refuse(source, `the file is larger than ${MAX_SERVER_JSON} bytes`, 'Pass the server.json of one server.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    refuse(source, `not JSON (${(err as Error).message})`, 'Pass an MCP Registry server.json file.');
  }
  // A registry API answer wraps the document in `server`.
  const wrapped = parsed as { name?: unknown; server?: unknown } | null;
  if (wrapped && typeof wrapped === 'object' && wrapped.name === undefined && typeof wrapped.server === 'object')
    parsed = wrapped.server;
  const { error, value } = serverJson.validate(parsed, { abortEarly: true, convert: false });
  if (error) {
    const detail = error.details[0]!;
    const field = detail.path.length ? detail.path.join('.') : 'server.json';
    refuse(
      source,
      `not an MCP Registry server.json: ${detail.message}`,
      'Pass an MCP Registry server.json file.',
      field,
    );
  }
  const doc = value as ServerJson;
  const chosen = (doc.remotes ?? []).find((r) => r.type === 'streamable-http');
  if (!chosen) {
    if ((doc.remotes ?? []).length > 0)
      refuse(
        source,
        `${doc.name} offers no streamable-http remote (only ${[...new Set(doc.remotes!.map((r) => r.type))].join(', ')}): svc connects to upstreams over Streamable HTTP`,
        'Ask for its Streamable HTTP endpoint and add that URL: svc mcp servers add NAME URL.',
        'remotes',
      );
    const first = doc.packages?.[0];
    if (first)
      refuse(
        source,
        `${doc.name} is a local server (${first.registryType} package ${first.identifier}${first.version ? ` ${first.version}` : ''}, ${first.transport?.type ?? 'stdio'}): it cannot be added as a remote server`,
        LOCAL_FIX,
        'packages',
      );
    refuse(source, `${doc.name} has neither remotes nor packages`, 'Pass a server.json with a remotes entry.');
  }
  let needsSecret = false;
  for (const h of chosen.headers ?? []) {
    if (h.name.toLowerCase() === 'authorization') {
      if (h.value !== undefined && h.value !== '' && !/^bearer\b/i.test(h.value))
        refuse(
          source,
          `the remote's Authorization header is not a bearer token (${h.value.split(/\s/)[0]}): svc sends an upstream only Authorization: Bearer`,
          'Use a server that takes a bearer token.',
          'remotes.headers',
        );
      needsSecret = true;
    } else if (h.isRequired)
      refuse(
        source,
        `the remote requires the header ${h.name}: svc sends an upstream no header but Authorization: Bearer`,
        'Use a server that takes a bearer token, or put a proxy that adds the header in front of it.',
        'remotes.headers',
      );
  }
  const name =
    (doc.name.split('/').pop() ?? '')
      .replace(/[^A-Za-z0-9_-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 64) || 'server';
  return { registryName: doc.name, name, url: /[{}]/.test(chosen.url) ? null : chosen.url, needsSecret };
}
