/**
 * Redirect URIs (RFC 7591, RFC 8252): what a client may register or list in its metadata document, and
 * how a presented one is matched against them.
 */
const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** https, or http on a loopback address; no fragment. */
export function acceptableRedirect(uri: string): boolean {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return false;
  }
  if (url.hash !== '' || uri.includes('#')) return false;
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.has(url.hostname));
}

/** Exact match, except that a loopback http redirect may come back on any port (RFC 8252 7.3). */
export function redirectMatches(registered: string, presented: string): boolean {
  if (registered === presented) return true;
  try {
    const a = new URL(registered);
    const b = new URL(presented);
    if (a.protocol !== 'http:' || !LOOPBACK.has(a.hostname)) return false;
    a.port = '';
    b.port = '';
    return a.href === b.href;
  } catch {
    return false;
  }
}
