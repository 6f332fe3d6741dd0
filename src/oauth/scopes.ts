/**
 * Scopes (RFC 6749 3.3; docs/mcp-oauth.md). There is one access: `svc:agent`, acting as the connected
 * agent at /mcp. `offline_access` asks for a refresh token.
 * Rules:
 * - A request without `scope`, or whose `scope` names none of this server's scopes (`mcp`, say),
 *   gets the default, `svc:agent offline_access`: the clients that connected before scopes were
 *   advertised keep their refresh tokens.
 * - A request with `scope` gets `svc:agent`, and `offline_access` only when it asked for it: a
 *   refresh token is issued exactly when `offline_access` is granted.
 * - Values this server does not know (`mcp`, `openid`, another server's) are ignored, as RFC 6749
 *   3.3 allows: the token answer's `scope` says what was granted. A value that is not a scope
 *   token at all (characters outside RFC 6749's NQCHAR) is `invalid_scope`.
 * - A refresh keeps the connection's scope; asking at refresh for a known scope it was not
 *   granted is `invalid_scope` (RFC 6749 6).
 */
export const SCOPE = 'svc:agent';
export const OFFLINE = 'offline_access';
export const SCOPES_SUPPORTED = [SCOPE, OFFLINE] as const;
export const DEFAULT_SCOPE = SCOPES_SUPPORTED.join(' ');
const MAX_SCOPE = 1024;

/** The scope granted for a requested one, or a problem (the text of an invalid_scope). */
export function grantedScope(requested: string | undefined): { scope: string } | { problem: string } {
  if (requested === undefined) return { scope: DEFAULT_SCOPE };
  if (requested.length > MAX_SCOPE) return { problem: `scope is longer than ${MAX_SCOPE} characters` };
  const values = requested.split(' ').filter((v) => v !== '');
  if (values.some((v) => !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(v)))
    return { problem: 'scope must be scope tokens separated by spaces' };
  if (!values.some((v) => (SCOPES_SUPPORTED as readonly string[]).includes(v))) return { scope: DEFAULT_SCOPE };
  return { scope: values.includes(OFFLINE) ? DEFAULT_SCOPE : SCOPE };
}

/** Whether a granted scope carries refresh tokens. */
export const offline = (scope: string): boolean => scope.split(' ').includes(OFFLINE);

/** At refresh: null when `requested` asks for nothing beyond `granted` (unknown values ignored). */
export function refreshScopeProblem(granted: string, requested: string | undefined): string | null {
  if (requested === undefined) return null;
  const parsed = grantedScope(requested);
  if ('problem' in parsed) return parsed.problem;
  const have = granted.split(' ');
  const beyond = requested
    .split(' ')
    .filter((v) => (SCOPES_SUPPORTED as readonly string[]).includes(v) && !have.includes(v));
  return beyond.length > 0 ? `this connection was not granted ${beyond.join(' ')}` : null;
}
