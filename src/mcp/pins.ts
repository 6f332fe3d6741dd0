import { createHash } from 'node:crypto';
import { AppError } from '../errors/app-error.js';
import type { Ledger } from '../ledger/service.js';
import { canonicalJson } from '../lib/canonical-json.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import type { McpServerRecord, McpToolPinRecord, McpToolState } from './records.js';
import { mcpServersRepo, pinsRepo } from './repo.js';

/**
 * Pins of upstream tools (issue 20 item 6): a proxy that does not take its upstreams' word.
 * Rules:
 * - What a tool tells an agent (its description and input schema) is hashed: SHA-256, lower-case
 *   hex, over the RFC 8785 canonical JSON of `{ description, inputSchema }` (description null
 *   when absent), so key order and spacing never count as a change.
 * - Each allowed tool is pinned (its state approved) when an owner or admin adds the server, and
 *   when one approves a change. A tool whose state is not its approved one (changed upstream, or
 *   never approved: it appeared after the server was added, or the server could not be reached
 *   when it was added) is withheld: left out of tools/list, its calls refused with
 *   `tool_changed`, until someone approves what it says now.
 * - A change is recorded once: the first listing that sees a new state writes it beside the pin
 *   and records `mcp.tool_changed` in the ledger (which queues the outbound event of that name
 *   in the same write); seeing the same state again writes nothing. An upstream that goes back
 *   to its approved state is served again, and the pending change is dropped.
 * - An approval names the hash it approves: a change that changed again since the person looked
 *   is not approved blindly.
 */
export interface PinnedTool {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
}

/**
 * The states already hashed, by the listed tool object: a listing is kept for PIN_RECHECK_MS
 * (listings.ts) and every call of one of its tools is checked against it, so each tool object
 * is hashed once, not once per call. Listed tools are never changed in place (a new listing is
 * new objects).
 */
const hashed = new WeakMap<PinnedTool, McpToolState>();

/** The hashed state of what a tool tells an agent. */
export function toolState(tool: PinnedTool): McpToolState {
  let state = hashed.get(tool);
  if (!state) hashed.set(tool, (state = hashState(tool)));
  return state;
}

function hashState(tool: PinnedTool): McpToolState {
  const description = typeof tool.description === 'string' ? tool.description : null;
  const inputSchema = tool.inputSchema ?? {};
  let text: string;
  try {
    text = canonicalJson({ description, inputSchema });
  } catch {
    // Not canonicalisable (a lone surrogate): still a fixed hash for the same bytes, never a pass.
    text = JSON.stringify({ description, inputSchema });
  }
  return { hash: createHash('sha256').update(text).digest('hex'), description, inputSchema };
}

/** What the console and the API show of a pin. */
export interface PinView {
  tool: string;
  status: 'approved' | 'changed' | 'new';
  approved: {
    hash: string;
    description: string | null;
    inputSchema: Record<string, unknown>;
    at: string;
    by: string;
  } | null;
  changed: { hash: string; description: string | null; inputSchema: Record<string, unknown>; seenAt: string } | null;
}

export function pinView(p: McpToolPinRecord): PinView {
  return {
    tool: p.tool,
    status: p.changed === null ? 'approved' : p.approved === null ? 'new' : 'changed',
    approved: p.approved,
    changed: p.changed,
  };
}

export function createPins(deps: { store: Store; clock: Clock; ledger: Ledger }) {
  const { store, clock, ledger } = deps;
  const repo = pinsRepo(store);
  const servers = mcpServersRepo(store);
  const sameServer = async (server: McpServerRecord) =>
    (await servers.get(server.workspaceId, server.name))?.createdAt === server.createdAt;

  /** Inside a write: the change to `state` recorded beside the pin, once; or the pin's pending change dropped. */
  const noteInWrite = async (server: McpServerRecord, tool: string, state: McpToolState): Promise<void> => {
    const wid = server.workspaceId;
    const pin = (await repo.pin(wid, server.name, tool)) ?? {
      workspaceId: wid,
      server: server.name,
      tool,
      approved: null,
      changed: null,
    };
    if (pin.approved?.hash === state.hash) {
      if (pin.changed !== null) await repo.putPin({ ...pin, changed: null });
      return;
    }
    if (pin.changed?.hash === state.hash) return;
    await repo.putPin({ ...pin, changed: { ...state, seenAt: isoAt(clock.now()) } });
    await ledger.record({
      workspaceId: wid,
      actor: 'system',
      kind: 'mcp.tool_changed',
      subject: server.name,
      data: { server: server.name, tool, oldHash: pin.approved?.hash ?? null, newHash: state.hash },
    });
  };

  return {
    /** Inside the write that adds a server: its tools as listed now are its approved ones. */
    async pinInWrite(
      server: McpServerRecord,
      tools: readonly PinnedTool[],
      actor: string,
    ): Promise<Record<string, string>> {
      await repo.removePins(server.workspaceId, server.name);
      const at = isoAt(clock.now());
      const hashes: Record<string, string> = {};
      for (const tool of tools) {
        const state = toolState(tool);
        await repo.putPin({
          workspaceId: server.workspaceId,
          server: server.name,
          tool: tool.name,
          approved: { ...state, at, by: actor },
          changed: null,
        });
        hashes[tool.name] = state.hash;
      }
      return hashes;
    },

    /** Inside the write that removes a server: its pins go with it. */
    async removeInWrite(wid: string, server: string): Promise<void> {
      await repo.removePins(wid, server);
    },

    /**
     * A listing of one server's (allowed) tools, as the upstream gave it: the names of those that
     * match their pins. New states are recorded (once each); a failure to record them is left for
     * the next listing, since withholding does not depend on it.
     */
    async observe(server: McpServerRecord, tools: readonly PinnedTool[]): Promise<Set<string>> {
      const served = new Set<string>();
      const notes: Array<{ tool: string; state: McpToolState }> = [];
      const states = tools.map((tool) => ({ tool, state: toolState(tool) }));
      const found = await Promise.all(states.map(({ tool }) => repo.pin(server.workspaceId, server.name, tool.name)));
      for (const [i, { tool, state }] of states.entries()) {
        const pin = found[i];
        if (pin?.approved?.hash === state.hash) {
          served.add(tool.name);
          if (pin.changed !== null) notes.push({ tool: tool.name, state });
        } else if (pin?.changed?.hash !== state.hash) {
          notes.push({ tool: tool.name, state });
        }
      }
      if (notes.length > 0)
        await store
          .write(async () => {
            // A server removed (or added again) meanwhile keeps no pin of this listing.
            if (!(await sameServer(server))) return;
            for (const n of notes) await noteInWrite(server, n.tool, n.state);
          })
          .catch(() => {});
      return served;
    },

    /**
     * Why a call of `tool` is refused, or null when it may go on: `current` is the tool as the
     * upstream lists it now (undefined: it does not list it). The pin is read from the store, so
     * an approval made by another process counts at once.
     */
    async refusal(
      server: McpServerRecord,
      exposedName: string,
      tool: string,
      current: PinnedTool | undefined,
    ): Promise<AppError | null> {
      if (!current)
        return new AppError('not_found', {
          message: `No tool ${exposedName} here: the upstream MCP server ${server.name} does not list it.`,
          fix: 'Call a tool that tools/list names.',
        });
      const state = toolState(current);
      const pin = await repo.pin(server.workspaceId, server.name, tool);
      if (pin?.approved?.hash === state.hash) return null;
      const oldHash = pin?.approved?.hash ?? null;
      return new AppError('tool_changed', {
        message:
          oldHash === null
            ? `The tool ${exposedName} was never approved on the upstream MCP server ${server.name}: it is withheld until an owner or admin approves it.`
            : `The tool ${exposedName} changed on the upstream MCP server ${server.name} since it was approved (its description or input schema): it is withheld until an owner or admin approves the change.`,
        fix: `An owner or admin reviews the change in the console (MCP section) and approves it, or calls POST /api/w/${server.workspaceId}/mcp-servers/${server.name}/tools/${tool}/approve with {"hash":"${state.hash}"}; then list the tools again.`,
        details: { server: server.name, tool, oldHash, newHash: state.hash },
      });
    },

    async list(wid: string, server: string): Promise<PinView[]> {
      return (await repo.pinsOf(wid, server)).map(pinView);
    },

    /** Approves the change waiting for `tool`, named by its hash; recorded in the ledger. */
    async approve(server: McpServerRecord, tool: string, hash: string, actor: string): Promise<PinView> {
      const wid = server.workspaceId;
      return store.write(async () => {
        const pin = (await sameServer(server)) ? await repo.pin(wid, server.name, tool) : undefined;
        if (!pin?.changed)
          throw new AppError('not_found', {
            message: `No change of tool ${tool} on the upstream MCP server ${server.name} waits for approval.`,
            fix: 'List the tools of the server (GET …/mcp-servers/{name}/tools) and approve one whose status is changed or new.',
          });
        if (pin.changed.hash !== hash)
          throw new AppError('invalid_request', {
            details: {
              errors: [
                {
                  field: 'hash',
                  message: `is not the change waiting (${pin.changed.hash}): the tool changed again; review it before approving`,
                },
              ],
            },
          });
        const { seenAt: _seen, ...state } = pin.changed;
        const next: McpToolPinRecord = {
          ...pin,
          approved: { ...state, at: isoAt(clock.now()), by: actor },
          changed: null,
        };
        await repo.putPin(next);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: 'mcp.tool_approved',
          subject: server.name,
          data: { server: server.name, tool, oldHash: pin.approved?.hash ?? null, newHash: hash },
        });
        return pinView(next);
      });
    },
  };
}

export type Pins = ReturnType<typeof createPins>;
