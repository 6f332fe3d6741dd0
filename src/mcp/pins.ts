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
 * - What a tool tells an agent (the whole tool: its description, input schema, output schema and
 *   annotations) is hashed: SHA-256, lower-case hex, over the RFC 8785 canonical JSON of
 *   `{ description, inputSchema, outputSchema, annotations }` (description null when absent;
 *   outputSchema and annotations left out when the tool declares none, so a tool without them
 *   keeps the hash it had when only the description and input schema were pinned), so key order
 *   and spacing never count as a change. Flipping `readOnlyHint`, or changing what the tool says
 *   it returns, is a change like any other.
 * - A pin approved before output schemas and annotations were pinned (its state has neither
 *   field) still holds the tool whose description and input schema it approved: the first
 *   listing that sees such a tool records its whole state as the approved one (same approver and
 *   time, nothing in the ledger), and from then on any change of the four is held. An upgrade
 *   so withholds no tool that did not change; what a tool declared beyond its description and
 *   input schema before that first listing is taken as it is then.
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
  outputSchema?: unknown;
  annotations?: unknown;
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

const objectOrNull = (value: unknown): Record<string, unknown> | null =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;

function hashOf(fields: Record<string, unknown>): string {
  let text: string;
  try {
    text = canonicalJson(fields);
  } catch {
    // Not canonicalisable (a lone surrogate): still a fixed hash for the same bytes, never a pass.
    text = JSON.stringify(fields);
  }
  return createHash('sha256').update(text).digest('hex');
}

function hashState(tool: PinnedTool): McpToolState {
  const description = typeof tool.description === 'string' ? tool.description : null;
  const inputSchema = tool.inputSchema ?? {};
  const outputSchema = objectOrNull(tool.outputSchema);
  const annotations = objectOrNull(tool.annotations);
  const hash = hashOf({
    description,
    inputSchema,
    ...(outputSchema ? { outputSchema } : {}),
    ...(annotations ? { annotations } : {}),
  });
  return { hash, description, inputSchema, outputSchema, annotations };
}

const refused = (...args: ConstructorParameters<typeof AppError>) => ({ refusal: new AppError(...args) });

/** Whether the approved state holds the tool as listed now (a pin from before the whole tool was pinned: by its description and input schema). */
function agrees(approved: McpToolState | null | undefined, tool: PinnedTool): boolean {
  if (!approved) return false;
  if (approved.hash === toolState(tool).hash) return true;
  if ('outputSchema' in approved) return false;
  const description = typeof tool.description === 'string' ? tool.description : null;
  return approved.hash === hashOf({ description, inputSchema: tool.inputSchema ?? {} });
}

/** What the console and the API show of a pin. */
export interface PinView {
  tool: string;
  status: 'approved' | 'changed' | 'new';
  approved: McpToolPinRecord['approved'];
  changed: McpToolPinRecord['changed'];
  /** Calls per minute each agent may make of the tool; null: no limit of its own. */
  callsPerMinute: number | null;
}

export function pinView(p: McpToolPinRecord): PinView {
  return {
    tool: p.tool,
    status: p.changed === null ? 'approved' : p.approved === null ? 'new' : 'changed',
    approved: p.approved,
    changed: p.changed,
    callsPerMinute: p.callsPerMinute ?? null,
  };
}

/**
 * Each allowed tool's pin (the rules above): it reads and writes `mcpToolPins` (and reads
 * `mcpServers`), with `mcp.tool_*` ledger records.
 */
export interface Pins {
  /** Inside the write that adds a server: its tools as listed now are its approved ones (each tool's hash, by name). */
  pinInWrite(server: McpServerRecord, tools: readonly PinnedTool[], actor: string): Promise<Record<string, string>>;
  /** Inside the write that removes a server: its pins go with it. */
  removeInWrite(wid: string, server: string): Promise<void>;
  /**
   * A listing of one server's (allowed) tools, as the upstream gave it: the names of those that
   * match their pins. New states are recorded (once each).
   */
  observe(server: McpServerRecord, tools: readonly PinnedTool[]): Promise<Set<string>>;
  /**
   * Whether a call of `tool` may go on: `current` is the tool as the upstream lists it now
   * (undefined: it does not list it). Refused, the refusal; else the calls per minute each agent
   * may make of it (null: no limit of its own).
   */
  admission(
    server: McpServerRecord,
    exposedName: string,
    tool: string,
    current: PinnedTool | undefined,
  ): Promise<{ refusal: AppError } | { refusal: null; callsPerMinute: number | null }>;
  /** One server's pins, as the console shows them. */
  list(wid: string, server: string): Promise<PinView[]>;
  /** Approves the change waiting for `tool`, named by its hash (and sets its own limit when given). */
  approve(
    server: McpServerRecord,
    tool: string,
    hash: string,
    actor: string,
    callsPerMinute?: number | null,
  ): Promise<PinView>;
}

export function createPins(deps: { store: Store; clock: Clock; ledger: Ledger }): Pins {
  const { store, clock, ledger } = deps;
  const repo = pinsRepo(store);
  const servers = mcpServersRepo(store);
  const sameServer = async (server: McpServerRecord) =>
    (await servers.get(server.workspaceId, server.name))?.createdAt === server.createdAt;

  /**
   * Inside a write: the tool's new state recorded beside the pin, once; or the pin's pending
   * change dropped (and a pin from before the whole tool was pinned given its whole state).
   */
  const noteInWrite = async (server: McpServerRecord, listed: PinnedTool): Promise<void> => {
    const wid = server.workspaceId;
    const tool = listed.name;
    const state = toolState(listed);
    const pin = (await repo.pin(wid, server.name, tool)) ?? {
      workspaceId: wid,
      server: server.name,
      tool,
      approved: null,
      changed: null,
    };
    if (pin.approved && agrees(pin.approved, listed)) {
      const { at, by, hash } = pin.approved;
      if (pin.changed !== null || hash !== state.hash)
        await repo.putPin({ ...pin, approved: { ...state, at, by }, changed: null });
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
      const notes: PinnedTool[] = [];
      const found = await Promise.all(tools.map((tool) => repo.pin(server.workspaceId, server.name, tool.name)));
      for (const [i, tool] of tools.entries()) {
        const pin = found[i];
        const state = toolState(tool);
        if (agrees(pin?.approved, tool)) {
          served.add(tool.name);
          if (pin!.changed !== null || pin!.approved!.hash !== state.hash) notes.push(tool);
        } else if (pin?.changed?.hash !== state.hash) {
          notes.push(tool);
        }
      }
      if (notes.length > 0)
        await store
          .write(async () => {
            // A server removed (or added again) meanwhile keeps no pin of this listing.
            if (!(await sameServer(server))) return;
            for (const tool of notes) await noteInWrite(server, tool);
          })
          .catch(() => {});
      return served;
    },

    /**
     * Whether a call of `tool` may go on: `current` is the tool as the upstream lists it now
     * (undefined: it does not list it). Refused, the refusal; else the calls per minute each agent
     * may make of it (null: no limit of its own). The pin is read from the store once per call
     * (for both), so an approval or a limit set by another process counts at once.
     */
    async admission(
      server: McpServerRecord,
      exposedName: string,
      tool: string,
      current: PinnedTool | undefined,
    ): Promise<{ refusal: AppError } | { refusal: null; callsPerMinute: number | null }> {
      if (!current)
        return refused('not_found', {
          message: `No tool ${exposedName} here: the upstream MCP server ${server.name} does not list it.`,
          fix: 'Call a tool that tools/list names.',
        });
      const state = toolState(current);
      const pin = await repo.pin(server.workspaceId, server.name, tool);
      if (agrees(pin?.approved, current)) return { refusal: null, callsPerMinute: pin?.callsPerMinute ?? null };
      const oldHash = pin?.approved?.hash ?? null;
      return refused('tool_changed', {
        message:
          oldHash === null
            ? `The tool ${exposedName} was never approved on the upstream MCP server ${server.name}: it is withheld until an owner or admin approves it.`
            : `The tool ${exposedName} changed on the upstream MCP server ${server.name} since it was approved (its description, input or output schema, or annotations): it is withheld until an owner or admin approves the change.`,
        fix: `An owner or admin reviews the change in the console (MCP section) and approves it, or calls POST /api/w/${server.workspaceId}/mcp-servers/${server.name}/tools/${tool}/approve with {"hash":"${state.hash}"}; then list the tools again.`,
        details: { server: server.name, tool, oldHash, newHash: state.hash },
      });
    },

    async list(wid: string, server: string): Promise<PinView[]> {
      return (await repo.pinsOf(wid, server)).map(pinView);
    },

    /**
     * Approves the change waiting for `tool`, named by its hash; recorded in the ledger. With
     * `callsPerMinute` (null: none) it sets the tool's own per-agent limit too; the limit alone
     * is set on an approved tool by naming its approved hash.
     */
    async approve(
      server: McpServerRecord,
      tool: string,
      hash: string,
      actor: string,
      callsPerMinute?: number | null,
    ): Promise<PinView> {
      const wid = server.workspaceId;
      return store.write(async () => {
        const pin = (await sameServer(server)) ? await repo.pin(wid, server.name, tool) : undefined;
        const limit = callsPerMinute === undefined ? {} : { callsPerMinute };
        if (pin && !pin.changed && pin.approved?.hash === hash && callsPerMinute !== undefined) {
          const next: McpToolPinRecord = { ...pin, ...limit };
          await repo.putPin(next);
          await ledger.record({
            workspaceId: wid,
            actor,
            kind: 'mcp.tool_approved',
            subject: server.name,
            data: { server: server.name, tool, oldHash: hash, newHash: hash, callsPerMinute },
          });
          return pinView(next);
        }
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
          ...limit,
        };
        await repo.putPin(next);
        await ledger.record({
          workspaceId: wid,
          actor,
          kind: 'mcp.tool_approved',
          subject: server.name,
          data: { server: server.name, tool, oldHash: pin.approved?.hash ?? null, newHash: hash, ...limit },
        });
        return pinView(next);
      });
    },
  };
}
