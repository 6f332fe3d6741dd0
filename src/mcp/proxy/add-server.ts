import type { Client } from '@modelcontextprotocol/client';
import { AppError } from '../../errors/app-error.js';
import { isoAt } from '../../lib/clock.js';
import { sealText } from '../../lib/seal.js';
import { diagnose, withDeadline, type UpstreamProblem } from '../diagnosis.js';
import type { McpServerRecord } from '../records.js';
import type { ProxyContext } from './context.js';
import { allowed, serverView } from './naming.js';
import {
  SEAL_PURPOSE,
  type McpServerAdded,
  type McpServerInput,
  type UpstreamEra,
  type UpstreamTool,
} from './types.js';
import { urlProblem } from './url-problem.js';

/**
 * Adding a remote upstream server, an owner's or admin's act, in order:
 * 1. its name: 1 to 64 letters, digits, _ or -, and not a local server's of the configuration;
 * 2. its URL: https (http on loopback only), no credentials or query, no refused address written
 *    in it (url-problem.ts);
 * 3. its tools as they are now, listed in both eras (a 2025-only upstream's refusal of the newer
 *    era is no failure), are what the person adding it approves (pins.ts); an upstream that
 *    cannot be listed within the deadline is added all the same, its tools withheld until each
 *    is approved, and the answer names why (diagnosis.ts);
 * 4. one write: the server (its secret sealed), its pins and a ledger record (never the secret);
 *    a name taken meanwhile is refused.
 */

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

const invalid = (field: string, message: string, said?: string) =>
  new AppError('invalid_request', { ...(said ? { message: said } : {}), details: { errors: [{ field, message }] } });

export function createAddServer(
  ctx: ProxyContext,
): (wid: string, input: McpServerInput, actor: string) => Promise<McpServerAdded> {
  const { deps, servers, pins, connections, limits } = ctx;
  const { store, clock, ledger, masterKey } = deps;

  const checkName = (wid: string, name: string) => {
    if (!NAME.test(name)) throw invalid('name', 'name must be 1 to 64 letters, digits, _ or -');
    if (deps.local?.declares(wid, name))
      throw invalid(
        'name',
        'is taken by a local server of the configuration',
        `A local MCP server named ${name} is in the configuration.`,
      );
  };
  const checkUrl = (url: string) => {
    const wrongUrl = urlProblem(url, deps.allowPrivateUpstreams);
    if (wrongUrl) throw invalid('url', wrongUrl);
  };

  /** The server's allowed tools, listed once in one era on a session opened and ended for it. */
  const listedIn = async (record: McpServerRecord, era: UpstreamEra): Promise<UpstreamTool[]> => {
    let client: Client | undefined;
    try {
      client = await connections.open(record, {}, era);
      const all = (await client.listTools(undefined, { timeout: limits.timeoutMs })).tools as UpstreamTool[];
      return all.filter((tool) => allowed(record, tool.name));
    } finally {
      if (client) await connections.end(client);
    }
  };
  /** The tools to pin (null: not listed, and why), both eras' merged. */
  const toolsToPin = async (
    record: McpServerRecord,
    secret: string | null | undefined,
  ): Promise<{ tools: UpstreamTool[] | null; problem: UpstreamProblem | null }> => {
    let problem: UpstreamProblem | null = null;
    const legacy = await withDeadline(listedIn(record, 'legacy'), limits.timeoutMs).catch((err: unknown) => {
      problem = diagnose(err, limits.timeoutMs, secret);
      return null;
    });
    if (!legacy) return { tools: null, problem };
    const modern = await withDeadline(listedIn(record, 'modern'), limits.timeoutMs).catch(() => [] as UpstreamTool[]);
    return { tools: [...legacy, ...modern.filter((tool) => !legacy.some((x) => x.name === tool.name))], problem };
  };

  return async (wid, input, actor) => {
    checkName(wid, input.name);
    checkUrl(input.url);
    const record: McpServerRecord = {
      name: input.name,
      workspaceId: wid,
      url: input.url,
      secretSealed: input.secret ? sealText(masterKey, SEAL_PURPOSE, `${wid}/${input.name}`, input.secret) : null,
      allowTools: input.allowTools ?? null,
      unprefixed: input.unprefixed ?? false,
      createdAt: isoAt(clock.now()),
      createdBy: actor,
    };
    const { tools, problem } = (await servers.has(wid, input.name))
      ? { tools: null, problem: null }
      : await toolsToPin(record, input.secret);
    await store.write(async () => {
      if (await servers.has(wid, input.name))
        throw invalid('name', 'is taken', `An upstream MCP server named ${input.name} exists.`);
      await servers.put(record);
      const pinned = await pins.pinInWrite(record, tools ?? [], actor);
      await ledger.record({
        workspaceId: wid,
        actor,
        kind: 'mcp.server_added',
        subject: input.name,
        data: {
          url: input.url,
          allowTools: record.allowTools,
          unprefixed: record.unprefixed,
          secret: record.secretSealed !== null,
          pinned: tools === null ? null : pinned,
          ...(problem ? { problem: problem.cause } : {}),
        },
      });
    });
    return { ...serverView(record), pinnedTools: tools === null ? null : tools.map((x) => x.name), problem };
  };
}
