import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { stringify } from 'yaml';
import { namedEnv } from '../settings/named-env.js';
import {
  DocumentError,
  lineOfField,
  parseWorkspaceFile,
  secretRefs,
  type WorkspaceDocument,
} from '../setup/document.js';
import type { Change, SetupResult } from '../setup/service.js';
import { CliFailure, EXIT } from './base-command.js';
import { tokenClient } from './flags.js';
import { resolveRemote } from './remote.js';
import { callServer, RemoteError } from './http-client.js';
import { printable } from './printable.js';

/**
 * What `svc apply` and `svc export` share: reading and checking the workspace file before any
 * request (a bad file is exit 2 with each problem's path and line), the secrets it refers to read
 * from this process's environment, the two calls to the server, and the plan as text.
 */

/** The file's refusal as the CLI's error: its type, every problem with path and line, exit 2. */
export function fileFailure(err: DocumentError, source: string): CliFailure {
  const first = err.errors[0]!;
  const where = (e: { line: number | null }) => (e.line === null ? source : `${source}:${e.line}`);
  const lines = err.errors.map((e) => `${where(e)}: ${e.message}`);
  return new CliFailure(
    `${source} is not a workspace file svc can apply (${err.errors.length} problem${err.errors.length === 1 ? '' : 's'}):\n  ${lines.join('\n  ')}`,
    {
      exit: EXIT.usage,
      type: err.type,
      details: { errors: err.errors, file: source, line: first.line },
    },
  );
}

/** The file named by -f (`-`: standard input), parsed and checked; `lineOf` finds a field's line in it. */
export async function readWorkspaceFile(
  path: string,
): Promise<{ document: WorkspaceDocument; source: string; lineOf: (field: string) => number | null }> {
  const source = path === '-' ? '(stdin)' : path;
  const raw =
    path === '-'
      ? await text(process.stdin)
      : await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
          const why =
            err.code === 'ENOENT'
              ? 'there is no such file'
              : err.code === 'EISDIR'
                ? 'it is a directory'
                : err.code === 'EACCES'
                  ? 'permission denied'
                  : 'it cannot be read';
          throw new CliFailure(`cannot read the workspace file ${path}: ${why}`, {
            exit: EXIT.usage,
            type: 'usage',
            fix: 'Name a readable workspace file with -f (or -f - to read standard input).',
          });
        });
  try {
    return { document: parseWorkspaceFile(raw), source, lineOf: lineOfField(raw) };
  } catch (err) {
    if (err instanceof DocumentError) throw fileFailure(err, source);
    throw err;
  }
}

/** The values of the variables the file refers to; any unset is exit 2 naming the field and the variable. */
export function secretsOf(document: WorkspaceDocument): Record<string, string> {
  const refs = secretRefs(document);
  // svc's own variables (SVC_TOKEN, SVC_ADMIN_KEY, ...) are the CLI's credentials: a file edited to
  // name one would send it to whatever server the file names.
  const own = refs.filter((r) => /^SVC_/i.test(r.fromEnv));
  if (own.length > 0)
    throw new CliFailure(
      `the file refers to svc's own variables, which are never sent as a secret: ${own.map((m) => `${m.fromEnv} (${m.field})`).join(', ')}`,
      {
        exit: EXIT.usage,
        type: 'invalid_workspace_file',
        fix: 'Keep each secret in a variable of its own (STRIPE_SIGNING_SECRET, say), not one whose name starts with SVC_.',
        details: {
          errors: own.map((m) => ({ field: m.field, message: `${m.fromEnv} is one of svc's own variables` })),
        },
      },
    );
  const missing = refs.filter((r) => namedEnv(r.fromEnv) === undefined);
  if (missing.length > 0)
    throw new CliFailure(
      `the file refers to environment variables that are not set: ${missing.map((m) => `${m.fromEnv} (${m.field})`).join(', ')}`,
      {
        exit: EXIT.usage,
        type: 'secret_unset',
        details: { errors: missing.map((m) => ({ field: m.field, message: `${m.fromEnv} is not set` })) },
      },
    );
  return Object.fromEntries(refs.map((r) => [r.fromEnv, namedEnv(r.fromEnv)!]));
}

/** The setup routes through the server with a service token; without one, the usage error that names SVC_TOKEN. */
export function setupClient(flags: {
  url?: string | undefined;
  context?: string | undefined;
  token?: string | undefined;
}) {
  // Which server and credential: a token and --url, else the signed-in context (svc login).
  tokenClient(flags);
  const { url, bearer } = resolveRemote(flags, flags.token);
  const call = async <T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> => {
    const send = (token: string) => callServer<T>(url, method, path, { bearer: token, ...(body ? { body } : {}) });
    if (typeof bearer === 'string') return send(bearer);
    try {
      return await send(await bearer!.get());
    } catch (err) {
      if (err instanceof RemoteError && err.status === 401 && err.type === 'token_expired')
        return send(await bearer!.refresh());
      throw err;
    }
  };
  return {
    url,
    /** A dry run asks for the plan (setup:read); applying needs setup:write. */
    apply: (body: { document: WorkspaceDocument; secrets: Record<string, string>; dryRun: boolean; prune: boolean }) =>
      call<SetupResult>('POST', body.dryRun ? '/v1/admin/setup/plan' : '/v1/admin/setup', body),
    export: () => call<{ document: WorkspaceDocument }>('GET', '/v1/admin/setup'),
  };
}

const VERB: Record<Change['action'], string> = {
  create: 'create',
  update: 'update',
  unchanged: 'unchanged',
  remove: 'remove',
  unmanaged: 'not in the file (left alone)',
};

/** The plan or what was done, one line per resource, then a sum. */
export function resultText(result: SetupResult, source: string): string[] {
  const shown = result.changes.filter((c) => c.action !== 'unchanged');
  const width = Math.max(12, ...shown.map((c) => c.section.length));
  const lines = shown.map(
    (c) =>
      `${c.action === 'create' ? '+' : c.action === 'update' ? '~' : c.action === 'remove' ? '-' : ' '} ${c.section.padEnd(width)} ${printable(c.name)}  ${VERB[c.action]}${c.fields.length > 0 ? `: ${c.fields.join(', ')}` : ''}`,
  );
  const s = result.summary;
  const sum = `${s.create} to create, ${s.update} to update, ${s.remove} to remove, ${s.unchanged} unchanged, ${s.unmanaged} in the workspace but not in the file`;
  if (!result.changed)
    lines.push(
      `No change: the workspace already matches ${source} (${s.unchanged} unchanged${s.unmanaged ? `, ${s.unmanaged} not in the file, left alone` : ''}).`,
    );
  else if (result.dryRun) lines.push(`Dry run, nothing written: ${sum}.`);
  else
    lines.push(
      `Applied ${source}: ${sum.replaceAll('to create', 'created').replaceAll('to update', 'updated').replaceAll('to remove', 'removed')}.`,
    );
  for (const g of result.secrets)
    lines.push(`The ${g.integration} integration's signing secret, shown this once: ${g.secret}`);
  return lines;
}

/** The workspace file as YAML, with a header saying where it came from. */
export function documentYaml(document: WorkspaceDocument, from: string): string {
  return `# svc workspace file, exported from ${from}. Secrets are references to environment variables.\n${stringify(document, { lineWidth: 0 })}`;
}

/**
 * A refusal of the file by the server (a name it refers to that the workspace lacks): the same
 * failure as the file's own problems, each field with its line in the file. Other errors as they are.
 */
export function withLines(err: unknown, source: string, lineOf: (field: string) => number | null): unknown {
  if (!(err instanceof RemoteError) || (err.type !== 'invalid_workspace_file' && err.type !== 'secret_unset'))
    return err;
  const listed = Array.isArray(err.details.errors)
    ? (err.details.errors as Array<{ field: string | null; message: string }>)
    : [];
  if (listed.length === 0) return err;
  return fileFailure(
    new DocumentError(
      err.type === 'secret_unset' ? 'secret_unset' : 'invalid_workspace_file',
      listed.map((e) => ({ field: e.field ?? '(file)', line: e.field ? lineOf(e.field) : null, message: e.message })),
    ),
    source,
  );
}
