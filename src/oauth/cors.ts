/**
 * CORS for the OAuth endpoints a browser-based MCP client calls from its own origin (issue 20):
 * both metadata documents, registration, token and revocation. Any origin, never credentials
 * (`Access-Control-Allow-Origin: *`, hapi's `ignore`): these routes read no cookie, so a page
 * on another origin learns nothing it could not learn by calling them from a server.
 * `mcp-protocol-version` is allowed because the MCP SDK sends it on metadata requests.
 * The authorization endpoint and the consent page have none: a person uses them, signed in.
 */
export const PUBLIC_CORS = {
  origin: 'ignore' as const,
  credentials: false,
  additionalHeaders: ['mcp-protocol-version'],
  maxAge: 600,
};
