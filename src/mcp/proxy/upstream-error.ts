import { ProtocolError } from '@modelcontextprotocol/client';
import { diagnose, errorWithoutSecret } from '../diagnosis.js';
import type { McpServerRecord } from '../records.js';

/**
 * An upstream's failure as the caller sees it: its own JSON-RPC errors pass through as it sent
 * them; a transport failure names its cause (diagnosis.ts: an HTTP status, a deadline, a TLS,
 * name or connection failure, an answer that is not MCP) in `error.data.cause`, without the
 * upstream's body or error text, which may hold what an internal service answered.
 */
export function upstreamError(
  err: unknown,
  server: McpServerRecord | undefined,
  timeoutMs: number,
  secret?: string | null,
): ProtocolError {
  // The upstream's own error, without the server's secret (an upstream may echo what it was sent).
  if (err instanceof ProtocolError) return errorWithoutSecret(err, secret);
  const name = `The ${server?.kind === 'local' ? 'local' : 'upstream'} MCP server${server ? ` ${server.name}` : ''}`;
  const { cause, status, message } = diagnose(err, timeoutMs, secret);
  if (server?.kind === 'local' && cause !== 'timeout')
    return new ProtocolError(
      -32003,
      `${name} failed: its process ended or could not start (see svc's log); the next call starts another.`,
      { type: 'upstream_failure', cause: 'process_exit' },
    );
  const data = { type: 'upstream_failure', cause, ...(status !== undefined ? { status } : {}) };
  if (cause === 'refused_address') return new ProtocolError(-32003, `${name} was not contacted: ${message}.`, data);
  const said = cause === 'connection' ? 'could not be reached' : cause === 'not_mcp' ? 'is not an MCP server' : message;
  return new ProtocolError(-32003, `${name} failed: ${said}.`, data);
}
