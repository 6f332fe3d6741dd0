import { ProtocolError, type Client } from '@modelcontextprotocol/client';
import { AppError } from '../../errors/app-error.js';
import { metrics } from '../../lib/metrics.js';
import { inSpan, SpanKind } from '../../lib/tracing.js';
import { errorWithoutSecret } from '../diagnosis.js';
import { actionOf } from '../narrowing.js';
import type { DataLossMode } from '../../settings/schema.js';
import type { ToolResult } from '../tools.js';
import { brokenBy } from '../upstream-sessions.js';
import type { ProxyContext } from './context.js';
import type { ToolListing } from './listing.js';
import { refuseIfStopped } from './standing.js';
import type { CallRelay, ProxyCaller, ProxyTarget } from './types.js';
import { upstreamError } from './upstream-error.js';

/**
 * A proxied tool call, as an ordered list of checks, each of which may end it:
 * 1. standing: a stopped agent's call is refused (thrown, for a JSON-RPC error);
 * 2. pinned: the tool is checked against the upstream's listing of at most PIN_RECHECK_MS ago and
 *    its pin, before the gate is asked, so a withheld tool's call is no action;
 * 3. guarded: the tool's own per-agent limit, and the arguments screened in the workspace's
 *    data-loss mode (tool-guard.ts);
 * 4. authorized: an action of type `mcp.<server>.<tool>` at the gate (behind the agent's gate
 *    limit); denied or waiting for a person, the answer is a tool result with `isError: true`
 *    saying so, and the upstream never sees it;
 * 5. forwarded: sent upstream as a CLIENT span, on the caller session's link or the agent's own
 *    session (forward, below); the upstream's own error is screened as a result would be;
 * 6. screened: the result, before the caller sees it (tool-guard.ts).
 * Each outcome is counted (`metrics.mcpCalls`).
 */
export type ProxyCall = (
  who: ProxyCaller,
  target: ProxyTarget,
  args: Record<string, unknown> | undefined,
  relay?: CallRelay,
) => Promise<ToolResult>;

export function createCall(ctx: ProxyContext, listing: Pick<ToolListing, 'checkPinned'>): ProxyCall {
  const { deps, guard, gate, pool } = ctx;

  const standing = async (who: ProxyCaller) => {
    try {
      await refuseIfStopped(deps.store, who);
    } catch (err) {
      metrics.mcpCalls.inc({ outcome: 'stopped' });
      throw err;
    }
  };

  const pinned = async (who: ProxyCaller, target: ProxyTarget, relay: CallRelay) => {
    try {
      return await listing.checkPinned(target, relay.link ?? pool.pooledFor(who, relay.era ?? 'legacy'));
    } catch (err) {
      metrics.mcpCalls.inc({ outcome: err instanceof AppError ? 'withheld' : 'upstream_error' });
      throw err;
    }
  };

  /** The gate's decision; anything but allow answered as a tool result saying what to do. */
  const authorized = async (who: ProxyCaller, target: ProxyTarget): Promise<ToolResult | undefined> => {
    const { type, domain } = actionOf(target.server, target.tool);
    const { action } = await gate.authorize(who, {
      type,
      summary: `MCP tool ${target.tool} on ${target.server.name}`,
      target: { domain },
    });
    if (action.decision === 'allow') return undefined;
    metrics.mcpCalls.inc({ outcome: action.decision === 'review' ? 'review' : 'denied' });
    const text =
      action.decision === 'review'
        ? `Waiting for a person: approval ${action.approvalId} (action ${action.id}). Call get_action with that id; once allowed, call the tool again.`
        : `Denied by the gate: ${action.reason} (${action.signals.join(', ')}). Ask for the mandate to allow ${type}.`;
    return {
      isError: true,
      content: [{ type: 'text', text }],
      structuredContent: { action: action as unknown as Record<string, unknown> },
    };
  };

  const forward = createForward(ctx);

  return async (who, target, args, relay = {}) => {
    await standing(who);
    const limit = await pinned(who, target, relay);
    const { sent, mode } = await guard.before(who, target, args, limit);
    const refusal = await authorized(who, target);
    if (refusal) return refusal;
    const result = await forward(who, target, sent, relay, mode);
    return guard.after(who, target, result, mode);
  };
}

/**
 * Step 5, the call sent upstream: on the caller session's upstream session (`relay.link`), or
 * else on the agent's. With hooks that relay (requests, notifications) or a progress relay the
 * call gets a client of its own attached to that session (no handshake), through which the
 * upstream's notifications and requests during the call reach the caller; with only
 * `own.capabilities` it takes the agent's session declaring that set. The call has its deadline
 * (`mcp.upstreamCallTimeoutMs`, counted again from each progress): past it, or when the caller
 * cancels, the upstream is sent `notifications/cancelled`.
 */
function createForward(ctx: ProxyContext) {
  const { limits, pool, connections, auth, guard } = ctx;
  return async (
    who: ProxyCaller,
    target: ProxyTarget,
    sent: Record<string, unknown>,
    relay: CallRelay,
    mode: DataLossMode,
  ): Promise<ToolResult> => {
    const era = relay.era ?? 'legacy';
    // A call that relays something back (progress, the upstream's requests or notifications)
    // gets a client of its own on the session; one that only declares the caller's
    // capabilities takes the agent's session declaring that set (past MAX_CAPABILITY_SETS, a
    // client of its own declaring it); one that declares nothing takes the era's plain one.
    const relays = relay.progress !== undefined || relay.own?.request !== undefined || relay.own?.notify !== undefined;
    const caps = relay.own?.capabilities;
    const shared = relays || relay.link ? undefined : pool.sessionOf(who, target.server, era, caps);
    const send = async (client: Client) =>
      (await client.callTool(
        {
          name: target.tool,
          arguments: sent,
          ...(relay.input?.inputResponses ? { inputResponses: relay.input.inputResponses } : {}),
          ...(relay.input?.requestState !== undefined ? { requestState: relay.input.requestState } : {}),
        } as never,
        {
          timeout: limits.callTimeoutMs,
          ...(relay.progress ? { onprogress: relay.progress, resetTimeoutOnProgress: true } : {}),
          ...(relay.signal ? { signal: relay.signal } : {}),
          ...(era === 'modern' ? { allowInputRequired: true } : {}),
        },
      )) as ToolResult;
    let client: Client | undefined;
    let failed = false;
    // The forwarded call is a CLIENT span (the gate's decision has its own spans); its result is
    // screened before the caller sees it (tool-guard.ts).
    return inSpan(
      `tools/call ${target.tool}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'mcp.method.name': 'tools/call',
          'gen_ai.tool.name': target.tool,
          'svc.mcp.server': target.server.name,
        },
      },
      async () => {
        // An attached call keeps the agent's session it is on from idling out while it runs.
        // A local server's process has one connection: the call goes on the session itself.
        const attached = async (b: Client) =>
          target.server.kind === 'local'
            ? send(b)
            : send((client = await connections.attach(b, target.server, relay.own ?? {}, era, who.agentId)));
        try {
          const result = shared
            ? await pool.sessions.use(shared, send)
            : relay.link?.use
              ? await relay.link.use(target.server, attached)
              : relay.link
                ? await attached(await relay.link(target.server))
                : await pool.sessions.use(pool.sessionOf(who, target.server, era)!, attached);
          metrics.mcpCalls.inc({ outcome: result.isError === true ? 'tool_error' : 'ok' });
          return result;
        } catch (err) {
          failed = true;
          metrics.mcpCalls.inc({ outcome: 'upstream_error' });
          // The link's upstream session failed on the way (not the upstream's own answer, nor a
          // deadline): the next request opens another. A link's `use` has ended that one session
          // already, once its other calls are answered; the agent's others are left alone.
          if (relay.link && !relay.link.use && brokenBy(err)) await relay.link.drop?.(target.server);
          // The upstream's own error is screened as its result would be, without the credential
          // the call carried (the agent's own, or the workspace's) nor the server's secret.
          if (err instanceof ProtocolError) {
            const used = await auth.credential(target.server, who.agentId);
            const clean = errorWithoutSecret(errorWithoutSecret(err, used), ctx.secretOf(target.server));
            throw await guard.afterError(who, target, clean, mode);
          }
          throw upstreamError(err, target.server, limits.callTimeoutMs, ctx.secretOf(target.server));
        } finally {
          // A call that failed may still be sending the upstream its notifications/cancelled
          // (past the deadline, or cancelled by the caller): its client closes once that is out.
          if (client && failed) setTimeout(() => void client!.close().catch(() => {}), limits.timeoutMs).unref();
          else await client?.close().catch(() => {});
        }
      },
    );
  };
}
