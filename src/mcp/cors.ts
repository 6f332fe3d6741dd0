import type { Request, ResponseToolkit, Server } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';

/**
 * CORS on /mcp for browser-based MCP clients (issue 34 part 4): the pages of the origins the
 * operator lists in `mcp.allowedOrigins` (exact origins, as a browser sends them) may call /mcp.
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
const PATH = '/mcp';
const METHODS = 'GET, POST, DELETE';
const HEADERS = ['authorization', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];
const EXPOSED = 'mcp-session-id, www-authenticate';
const MAX_AGE = '600';

export function mcpCors(server: Server, origins: readonly string[], baseUrl: () => string) {
  const allowed = new Set(origins);
  const allows = (origin: string): boolean => allowed.has(origin);

  // Before anything answers (authentication included): whatever /mcp answers an allowed origin,
  // hapi's response or the MCP transport's own, is readable by its page.
  server.ext('onRequest', (request: Request, h: ResponseToolkit) => {
    const origin = request.headers.origin;
    if (request.path === PATH && typeof origin === 'string' && allows(origin)) {
      const res = request.raw.res;
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-expose-headers', EXPOSED);
      res.setHeader('vary', 'origin');
    }
    return h.continue;
  });
  // hapi's own answers set their Vary (accept-encoding) over the one above: Origin added to it.
  server.ext('onPreResponse', (request: Request, h: ResponseToolkit) => {
    const origin = request.headers.origin;
    const response = request.response;
    if (request.path === PATH && typeof origin === 'string' && allows(origin)) {
      if ('isBoom' in response && response.isBoom) response.output.headers.vary = 'origin';
      else if (!('isBoom' in response)) response.vary('origin');
    }
    return h.continue;
  });

  server.route({
    method: 'OPTIONS',
    path: PATH,
    options: { auth: false },
    handler(request, h) {
      const origin = request.headers.origin;
      if (typeof origin !== 'string' || !allows(origin))
        throw new AppError('forbidden', {
          message: `Origin ${typeof origin === 'string' ? origin : '(none)'} may not call this MCP server.`,
          fix: `The operator of ${new URL(baseUrl()).host} lists the page's origin in mcp.allowedOrigins.`,
        });
      const asked = String(request.headers['access-control-request-headers'] ?? '')
        .split(',')
        .map((x) => x.trim().toLowerCase())
        .filter((x) => /^mcp-[a-z0-9-]+$/.test(x) && !HEADERS.includes(x));
      return h
        .response()
        .code(204)
        .header('access-control-allow-methods', METHODS)
        .header('access-control-allow-headers', [...HEADERS, ...asked].join(', '))
        .header('access-control-max-age', MAX_AGE);
    },
  });

  return { allows };
}
