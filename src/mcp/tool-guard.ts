import { AppError } from '../errors/app-error.js';
import type { Gate } from '../gate/service.js';
import { ProtocolError } from '@modelcontextprotocol/client';
import { countByKind, describeCounts, findSensitive, redact, type DlpKind } from '../gateway/dlp.js';
import { createRateLimiter, type RateDecision, type RateLimiter } from '../http/rate-limit.js';
import type { Ledger } from '../ledger/service.js';
import type { Clock } from '../lib/clock.js';
import { metrics } from '../lib/metrics.js';
import type { DataLossMode } from '../settings/schema.js';
import type { Store } from '../store/index.js';
import type { McpServerRecord } from './records.js';
import type { ToolResult } from './tools.js';

/**
 * Limits and screening on the tools at /mcp (issue 34 part 3).
 * Rules:
 * - The gate's per-agent rate limit (`rateLimits.gatePerMinute`) is one budget for HTTP and
 *   MCP: the limiter the agent-key strategy takes on the gate's HTTP routes is taken by every
 *   `authorize_action` and every proxied tool call's authorization at the gate (limitGate).
 * - A tool approved with `callsPerMinute` may be called that many times a minute by each agent;
 *   the next call is refused before the gate is asked (no action) and before the upstream is.
 * - The workspace's data-loss mode (the model gateway's, `gateway.dataLoss` or the console's
 *   workspace setting) screens every string of a proxied call's arguments before they are sent
 *   and of its result (content of every kind, structured content, `_meta`) before the caller
 *   sees it, object keys included, with the gateway's detectors (gateway/dlp.ts): `redact` replaces
 *   each finding by `[REDACTED:<kind>]`, `block` refuses (the call is not sent; or its result is
 *   withheld, the upstream having run it), `off` reads nothing. Each screening that found
 *   something is one `mcp.tool_screened` ledger record: server, tool, `in` (arguments or
 *   result), mode, outcome (redacted or blocked) and counts by kind, never a value.
 * - Over MCP a refusal keeps the shape refusals have there: `authorize_action`'s is a tool
 *   result with `isError: true` (as all the gate tools' refusals); a proxied call's is a JSON-RPC
 *   error -32001 (as a withheld tool's), `type` rate_limited or sensitive_data_blocked, with
 *   `limit` and `retryAfter` (seconds) for a limit, and `findings` and `in` for screening.
 */
type Counts = Partial<Record<DlpKind, number>>;
type Who = { workspaceId: string; agentId: string };
type Target = { server: McpServerRecord; tool: string };

/** The refusal of a request over a per-minute limit, as MCP shows it (no retry-after header to read there). */
export function overLimit(d: RateDecision, message: string): AppError {
  return new AppError('rate_limited', {
    message,
    fix: `Wait ${d.resetSeconds} seconds (retryAfter), then call again.`,
    details: { limit: d.limit, retryAfter: d.resetSeconds },
    headers: { 'retry-after': String(d.resetSeconds) },
  });
}

/** The gate, with its authorizations counted against the agent's per-minute limit shared with HTTP. */
export function limitGate(gate: Gate, limiter: RateLimiter): Gate {
  const limited: Gate = Object.create(gate) as Gate;
  limited.authorize = async (c, input, options) => {
    const d = await limiter.take(c.agentId);
    if (!d.allowed) throw overLimit(d, `This agent sent more than ${d.limit} gate requests this minute.`);
    return gate.authorize(c, input, options);
  };
  return limited;
}

/** How deep `mapStrings` walks a value; anything deeper is screened as its JSON text. */
const MAX_DEPTH = 64;

/**
 * Every string in a JSON value passed through `visit`, object keys included: a copy, the value
 * itself untouched. A key changed by `visit` that meets another key gets a suffix (`#2`, ...), so
 * no entry overwrites another. Past MAX_DEPTH a value is replaced by its JSON text, screened as
 * one string, so that no depth escapes screening.
 */
function mapStrings(value: unknown, visit: (text: string) => string, depth = 0): unknown {
  if (typeof value === 'string') return visit(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return visit(JSON.stringify(value));
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, visit, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const renamed = visit(k);
    let key = renamed;
    for (let n = 2; key !== k && (Object.hasOwn(out, key) || Object.hasOwn(value, key)); n += 1)
      key = `${renamed}#${n}`;
    Object.defineProperty(out, key, {
      value: mapStrings(v, visit, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** A result's strings passed through `visit`: all of them, wherever they are (content of every kind, structured content, `_meta`), keys included. */
function mapResult(result: ToolResult, visit: (text: string) => string): ToolResult {
  return mapStrings(result, visit) as ToolResult;
}

/**
 * The limits and screening of proxied calls (the rules above). Writes `mcp.tool_screened` ledger
 * records; counts each tool's per-agent window in the store's shared counters (every instance's).
 */
export interface ToolGuard {
  /**
   * Before a proxied call is authorized at the gate: its tool's own per-agent limit (`limit`,
   * from its pin; null: none) taken, and its arguments screened in the workspace's data-loss
   * mode, read once for the call. The arguments to send (redacted, or as they came), and that
   * mode, which screens the call's result (`after`).
   */
  before(
    who: Who,
    target: Target,
    args: Record<string, unknown> | undefined,
    limit: number | null,
  ): Promise<{ sent: Record<string, unknown>; mode: DataLossMode }>;
  /** A proxied call's result, screened in the mode its arguments were (`before`) before the caller sees it. */
  after(who: Who, target: Target, result: ToolResult, mode: DataLossMode): Promise<ToolResult>;
  /**
   * An upstream's own JSON-RPC error, screened like a result (its message and data may echo what
   * the tool read): the same code, its texts redacted, or withheld in block mode.
   */
  afterError(who: Who, target: Target, err: ProtocolError, mode: DataLossMode): Promise<ProtocolError>;
}

export function createToolGuard(deps: {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  /** The workspace's data-loss mode (the model gateway's setting). */
  dataLoss: (wid: string) => Promise<DataLossMode>;
}): ToolGuard {
  const { store, ledger } = deps;
  // One window per agent and tool; each tool's limit is its own (taken from its pin at each call).
  const perTool = createRateLimiter({ limit: 0, scope: 'mcpTool', counters: store.counters, clock: deps.clock });

  /** Screens `value`'s strings in `mode`: redacted copy and counts; block refuses after recording. */
  const screen = async <T>(
    who: Who,
    target: Target,
    where: 'arguments' | 'result',
    mode: DataLossMode,
    value: T,
    map: (v: T, visit: (text: string) => string) => T,
  ): Promise<T> => {
    if (mode === 'off') return value;
    const found: Counts = {};
    const screened = map(value, (text) => {
      const findings = findSensitive(text);
      if (findings.length === 0) return text;
      for (const [kind, n] of Object.entries(countByKind(findings)) as Array<[DlpKind, number]>)
        found[kind] = (found[kind] ?? 0) + n;
      return mode === 'redact' ? redact(text, findings) : text;
    });
    if (Object.keys(found).length === 0) return value;
    for (const [kind, n] of Object.entries(found)) metrics.dataLossFindings.inc({ kind, mode }, n);
    const outcome = mode === 'block' ? 'blocked' : 'redacted';
    await store.write(() =>
      ledger.record({
        workspaceId: who.workspaceId,
        actor: `agent:${who.agentId}`,
        kind: 'mcp.tool_screened',
        subject: target.server.name,
        data: { server: target.server.name, tool: target.tool, in: where, mode, outcome, findings: found },
      }),
    );
    if (mode === 'block')
      throw new AppError('sensitive_data_blocked', {
        message:
          where === 'arguments'
            ? `The arguments of the tool ${target.tool} hold ${describeCounts(found)}, and this workspace blocks sensitive data: the call was not sent.`
            : `The result of the tool ${target.tool} holds ${describeCounts(found)}, and this workspace blocks sensitive data: the result is withheld.`,
        details: { findings: found, in: where },
      });
    return screened;
  };

  return {
    /**
     * Before a proxied call is authorized at the gate: its tool's own per-agent limit (`limit`,
     * from its pin; null: none) taken, and its arguments screened in the workspace's data-loss
     * mode, read once for the call. The arguments to send (redacted, or as they came), and that
     * mode, which screens the call's result (`after`).
     */
    async before(who: Who, target: Target, args: Record<string, unknown> | undefined, limit: number | null) {
      if (limit !== null) {
        const d = await perTool.take(`${who.workspaceId}/${who.agentId}/${target.server.name}/${target.tool}`, limit);
        if (!d.allowed)
          throw overLimit(d, `This agent called the tool ${target.tool} more than ${d.limit} times this minute.`);
      }
      const mode = await deps.dataLoss(who.workspaceId);
      const sent = await screen(
        who,
        target,
        'arguments',
        mode,
        args ?? {},
        (v, visit) => mapStrings(v, visit) as Record<string, unknown>,
      );
      return { sent, mode };
    },

    /** A proxied call's result, screened in the mode its arguments were (`before`) before the caller sees it. */
    async after(who: Who, target: Target, result: ToolResult, mode: DataLossMode): Promise<ToolResult> {
      return screen(who, target, 'result', mode, result, mapResult);
    },

    /**
     * An upstream's own JSON-RPC error, screened like a result (its message and data may echo what
     * the tool read): the same code, its texts redacted, or withheld in block mode.
     */
    async afterError(who: Who, target: Target, err: ProtocolError, mode: DataLossMode): Promise<ProtocolError> {
      const seen = { message: err.message, data: err.data };
      const screened = await screen(
        who,
        target,
        'result',
        mode,
        seen,
        (v, visit) => mapStrings(v, visit) as typeof seen,
      );
      return screened === seen ? err : ProtocolError.fromError(err.code, screened.message, screened.data);
    },
  };
}
