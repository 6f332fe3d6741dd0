import { sleepOn, systemClock } from '../lib/clock.js';
import { CliFailure, EXIT } from './base-command.js';
import { sendsInClear, serverClient } from './client.js';
import { chosenContext, contextName, defaultContextName, readContexts, saveContext, sealTokens } from './contexts.js';
import { pollForTokens, startDeviceAuthorization, type DeviceAuthorization } from './device-login.js';
import { DEFAULT_URL } from './remote.js';

/**
 * What `svc login` does, apart from printing: start the device authorization at the server, wait
 * for a person to approve it in the console, learn who they are (GET /v1/admin/whoami with the new
 * token), and keep the sign-in as a context, made current.
 */
export interface LoginResult {
  context: string;
  url: string;
  user: { id: string; email: string; name: string };
  workspace: { id: string; name: string };
  role: string;
  expiresAt: string;
}

export async function login(
  flags: { url?: string | undefined; name?: string | undefined },
  say: (line: string) => void,
): Promise<LoginResult> {
  const named = flags.name === undefined ? undefined : contextName(flags.name);
  // The server: --url, else the named context's (signing in again), else the default.
  const known = named === undefined ? undefined : readContexts().contexts[named];
  const url = (flags.url ?? known?.url ?? DEFAULT_URL).replace(/\/+$/, '');
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol))
    throw new CliFailure(`--url ${url} is not an http(s) URL`, {
      exit: EXIT.usage,
      type: 'usage',
      fix: 'Pass --url as https://host[:port], where the server is reached.',
    });
  const name = named ?? defaultContextName(url);
  if (sendsInClear(url))
    say(`warning: ${url} is plain http to another machine: your sign-in crosses in clear. Use https.`);
  const device: DeviceAuthorization = await startDeviceAuthorization(url);
  say(`To sign in, open ${device.verificationUri} and enter the code ${device.userCode}`);
  if (device.verificationUriComplete) say(`(or open ${device.verificationUriComplete})`);
  say(`Waiting for approval in the console (the code expires in ${Math.ceil(device.expiresIn / 60)} min)...`);
  const pair = await pollForTokens(url, device, {
    sleep: (ms) => sleepOn(systemClock, ms),
    now: () => Date.now(),
    onPoll: (outcome, interval) => {
      if (outcome === 'slow_down') say(`the server asked to poll less often: every ${interval} s now`);
    },
  });
  const me = await serverClient(url, pair.access).whoami();
  if (me.kind !== 'person')
    throw new CliFailure('the server did not answer for a person', {
      exit: EXIT.false,
      type: 'invalid_response',
      fix: 'Check that --url names an svc server.',
    });
  const expiresAt = new Date(Date.now() + pair.expiresIn * 1000).toISOString();
  saveContext(
    name,
    {
      url,
      user: me.user,
      workspace: me.workspace,
      role: me.role,
      loginId: me.loginId,
      accessExpiresAt: expiresAt,
      sealed: sealTokens(name, url, { access: pair.access, refresh: pair.refresh }),
    },
    true,
  );
  return { context: name, url, user: me.user, workspace: me.workspace, role: me.role, expiresAt };
}

/** The context `svc logout` and `svc whoami` act on: the named one, else the current one; or a usage error. */
export function contextToUse(named: string | undefined): NonNullable<ReturnType<typeof chosenContext>> {
  const chosen = chosenContext(named);
  if (!chosen)
    throw new CliFailure('not signed in: no current context', {
      exit: EXIT.usage,
      type: 'unauthenticated',
      fix: 'Sign in with svc login --url URL (or name one with --context).',
    });
  return chosen;
}
