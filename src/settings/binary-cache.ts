import { tmpdir, userInfo } from 'node:os';
import { isAbsolute, join } from 'node:path';

/**
 * Where the single executable may keep the files it hands to the operating system (its native
 * addons and the JavaScript that loads them), best first. Only the binary reads this; the
 * npm-installed svc loads the same packages from node_modules.
 *
 * 1. `SVC_CACHE_DIR`, when the operator names one: then it is the only choice.
 * 2. `CACHE_DIRECTORY`, which systemd sets for a unit with `CacheDirectory=svc` (the first one).
 * 3. `$XDG_CACHE_HOME/svc`, else `~/.cache/svc` (the XDG base directories; the home from HOME,
 *    else from the user database).
 * 4. `<tmpdir>/svc-<uid>`, last, for an account without a usable home.
 *
 * Relative values are ignored, as the XDG specification says of its variables. The chosen folder
 * is checked (owned by this user, closed to others) by whoever uses it.
 */
export function binaryCacheCandidates(env: NodeJS.ProcessEnv = process.env): string[] {
  const absolute = (value: string | undefined) => (value && isAbsolute(value) ? value : undefined);
  const named = absolute(env.SVC_CACHE_DIR);
  if (named) return [named];
  const candidates: string[] = [];
  const systemd = absolute(env.CACHE_DIRECTORY?.split(':')[0]);
  if (systemd) candidates.push(systemd);
  const xdg = absolute(env.XDG_CACHE_HOME);
  if (xdg) candidates.push(join(xdg, 'svc'));
  const home = 'HOME' in env ? absolute(env.HOME) : passwdHome();
  if (home && home !== '/') candidates.push(join(home, '.cache', 'svc'));
  candidates.push(join(tmpdir(), `svc-${process.getuid?.() ?? 'user'}`));
  return [...new Set(candidates)];
}

/** The account's home from the user database, for a process started without HOME. */
function passwdHome(): string | undefined {
  try {
    const { homedir } = userInfo();
    return isAbsolute(homedir) ? homedir : undefined;
  } catch {
    return undefined;
  }
}
