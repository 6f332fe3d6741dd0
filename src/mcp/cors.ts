/**
 * CORS on /mcp for browser-based MCP clients (issue 34 part 4): the pages of the origins the
 * operator lists in `mcp.allowedOrigins` (exact origins, as a browser sends them) may call /mcp.
 * What is answered is decided here; http.ts puts it on the route.
 * Rules:
 * - A preflight (OPTIONS /mcp) from an allowed origin answers 204 with that origin in
 *   `Access-Control-Allow-Origin`, the methods /mcp takes (GET, POST, DELETE) and the headers MCP
 *   clients send (`authorization`, `content-type`, `mcp-session-id`, `mcp-protocol-version`,
 *   `last-event-id`, and any other `mcp-*` header the browser asks for: `mcp-method`,
 *   `mcp-name`, `mcp-param-*` of protocol 2026-07-28). From any other origin, or with none: 403
 *   forbidden, without CORS headers.
 * - Every answer of /mcp to an allowed origin (a 401 challenge, an error, a stream) carries
 *   `Access-Control-Allow-Origin` with that origin, `Vary: Origin` and
 *   `Access-Control-Expose-Headers: mcp-session-id, www-authenticate`, so that the page can read
 *   its session id and the challenge that starts OAuth. Never `Access-Control-Allow-Credentials`:
 *   /mcp reads a bearer token, never a cookie.
 * - The Origin check (http.ts) still refuses every other origin (DNS rebinding): the list is
 *   the only way in, and it is empty by default.
 */
const METHODS = 'GET, POST, DELETE';
const HEADERS = ['authorization', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];
const EXPOSED = 'mcp-session-id, www-authenticate';
const MAX_AGE = '600';

export function mcpCors(origins: readonly string[]) {
  const allowed = new Set(origins);
  /** Whether a page of `origin` (the header as sent, if any) may call /mcp. */
  const allows = (origin: unknown): origin is string => typeof origin === 'string' && allowed.has(origin);
  return {
    allows,
    /** The headers every answer to an allowed origin carries. */
    answerHeaders(origin: string): Record<string, string> {
      return { 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSED, vary: 'origin' };
    },
    /** The preflight's own headers, for the request headers the browser asked to send. */
    preflightHeaders(asked: unknown): Record<string, string> {
      const extra = String(asked ?? '')
        .split(',')
        .map((x) => x.trim().toLowerCase())
        .filter((x) => /^mcp-[a-z0-9-]+$/.test(x) && !HEADERS.includes(x));
      return {
        'access-control-allow-methods': METHODS,
        'access-control-allow-headers': [...HEADERS, ...extra].join(', '),
        'access-control-max-age': MAX_AGE,
      };
    },
  };
}
