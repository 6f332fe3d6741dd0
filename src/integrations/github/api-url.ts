/** Where GitHub's API is when the github kind names no `apiUrl`. */
export const DEFAULT_API_URL = 'https://api.github.com';

/** Whether `url` is under `apiUrl`: same origin, and its path under apiUrl's path. */
export function underApi(url: string, apiUrl: string): boolean {
  let u: URL;
  let base: URL;
  try {
    u = new URL(url);
    base = new URL(apiUrl);
  } catch {
    return false;
  }
  if (u.username || u.password || u.origin !== base.origin) return false;
  const prefix = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
  return u.pathname.startsWith(prefix);
}
