import { CliFailure, EXIT } from './base-command.js';
import { UnreachableError } from './http-client.js';

/**
 * The command line's side of the OAuth 2.0 device authorization grant (RFC 8628) and of its
 * person-bound tokens: ask for a code, poll the token endpoint at the interval (5 seconds more at
 * each `slow_down`, RFC 8628 3.5), refresh (each refresh token is used once: the new pair replaces
 * the old), revoke. The server's answers are checked before use (parseDeviceAuthorization,
 * parseTokens): a server that answers something else is a failure, never a crash.
 */
export const CLI_CLIENT_ID = 'svc-cli';
export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const SLOW_DOWN_SECONDS = 5;

export interface DeviceAuthorization {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete: string | null;
  expiresIn: number;
  interval: number;
}

export interface TokenPair {
  access: string;
  refresh: string;
  expiresIn: number;
}

/** What an OAuth endpoint answered. */
interface FormAnswer {
  status: number;
  body: Record<string, unknown>;
}

const isHttpUrl = (v: unknown): v is string =>
  typeof v === 'string' && URL.canParse(v) && /^https?:$/.test(new URL(v).protocol);
const positiveInt = (v: unknown, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= max;

/** RFC 8628 3.2's answer, checked; null when it is not one. */
export function parseDeviceAuthorization(body: unknown): DeviceAuthorization | null {
  if (!body || typeof body !== 'object') return null;
  const b = body as Record<string, unknown>;
  if (typeof b.device_code !== 'string' || b.device_code.length === 0 || b.device_code.length > 512) return null;
  if (typeof b.user_code !== 'string' || !/^[\x21-\x7e]{1,32}$/.test(b.user_code)) return null;
  if (!isHttpUrl(b.verification_uri)) return null;
  if (b.verification_uri_complete !== undefined && !isHttpUrl(b.verification_uri_complete)) return null;
  if (!positiveInt(b.expires_in, 86_400)) return null;
  // RFC 8628 3.2: without an interval, the client polls every 5 seconds.
  if (b.interval !== undefined && !positiveInt(b.interval, 3600)) return null;
  return {
    deviceCode: b.device_code,
    userCode: b.user_code,
    verificationUri: b.verification_uri,
    verificationUriComplete: typeof b.verification_uri_complete === 'string' ? b.verification_uri_complete : null,
    expiresIn: b.expires_in,
    interval: typeof b.interval === 'number' ? b.interval : 5,
  };
}

/** A token answer with both tokens, checked; null when it is not one. */
export function parseTokens(body: unknown): TokenPair | null {
  if (!body || typeof body !== 'object') return null;
  const b = body as Record<string, unknown>;
  if (typeof b.access_token !== 'string' || !/^[\x21-\x7e]{1,512}$/.test(b.access_token)) return null;
  if (typeof b.refresh_token !== 'string' || !/^[\x21-\x7e]{1,512}$/.test(b.refresh_token)) return null;
  if (typeof b.token_type !== 'string' || b.token_type.toLowerCase() !== 'bearer') return null;
  if (!positiveInt(b.expires_in, 10 * 365 * 86_400)) return null;
  return { access: b.access_token, refresh: b.refresh_token, expiresIn: b.expires_in };
}

export async function postForm(baseUrl: string, path: string, fields: Record<string, string>): Promise<FormAnswer> {
  const url = new URL(path, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`).toString();
  let status: number;
  let text: string;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
      redirect: 'error',
      signal: AbortSignal.timeout(60_000),
    });
    status = res.status;
    text = await res.text();
  } catch (err) {
    throw new UnreachableError(baseUrl, err);
  }
  try {
    const body: unknown = text ? JSON.parse(text) : {};
    return { status, body: body && typeof body === 'object' ? (body as Record<string, unknown>) : {} };
  } catch {
    throw new CliFailure(`the server at ${baseUrl} did not answer JSON at ${path} (HTTP ${status})`, {
      exit: EXIT.false,
      type: 'invalid_response',
      fix: 'Check that --url names an svc server.',
    });
  }
}

const oauthError = (answer: FormAnswer) => ({
  error: typeof answer.body.error === 'string' ? answer.body.error : `http_${answer.status}`,
  description: typeof answer.body.error_description === 'string' ? answer.body.error_description : '',
});

function refused(answer: FormAnswer, what: string, fix: string): never {
  const { error, description } = oauthError(answer);
  throw new CliFailure(`${what}: ${error}${description ? ` (${description})` : ''}`, {
    exit: answer.status === 400 && error === 'invalid_request' ? EXIT.usage : EXIT.false,
    type: error,
    fix,
  });
}

/** RFC 8628 3.1: a device code and the user code to show. */
export async function startDeviceAuthorization(baseUrl: string): Promise<DeviceAuthorization> {
  const answer = await postForm(baseUrl, '/oauth/device_authorization', { client_id: CLI_CLIENT_ID });
  if (answer.status !== 200)
    refused(answer, 'the server refused to start a sign-in', 'Check that --url names an svc server of this version.');
  const parsed = parseDeviceAuthorization(answer.body);
  if (!parsed)
    throw new CliFailure('the server answered the device authorization with something else', {
      exit: EXIT.false,
      type: 'invalid_response',
      fix: 'Check that --url names an svc server.',
    });
  return parsed;
}

/**
 * Polls the token endpoint until the person decides or the code expires (RFC 8628 3.4-3.5): waits
 * the interval before each poll, 5 seconds more for good after each `slow_down`. `sleep` and `now`
 * are given so that a test moves time; `onPoll` hears each answer's error code (or `issued`).
 */
export async function pollForTokens(
  baseUrl: string,
  device: DeviceAuthorization,
  io: {
    sleep: (ms: number) => Promise<void>;
    now: () => number;
    onPoll?: (outcome: string, intervalSeconds: number) => void;
  },
): Promise<TokenPair> {
  let interval = device.interval;
  const deadline = io.now() + device.expiresIn * 1000;
  for (;;) {
    await io.sleep(interval * 1000);
    const answer = await postForm(baseUrl, '/oauth/token', {
      grant_type: DEVICE_GRANT,
      device_code: device.deviceCode,
      client_id: CLI_CLIENT_ID,
    });
    if (answer.status === 200) {
      const pair = parseTokens(answer.body);
      if (!pair)
        throw new CliFailure('the server answered the token request with something else', {
          exit: EXIT.false,
          type: 'invalid_response',
          fix: 'Check that --url names an svc server.',
        });
      io.onPoll?.('issued', interval);
      return pair;
    }
    const { error } = oauthError(answer);
    if (error === 'slow_down') interval += SLOW_DOWN_SECONDS;
    io.onPoll?.(error, interval);
    if (error === 'authorization_pending' || error === 'slow_down') {
      // The server says expired_token past the code's lifetime; this holds if it never does.
      if (io.now() > deadline)
        throw new CliFailure('the code expired before anyone approved it', {
          exit: EXIT.false,
          type: 'expired_token',
          fix: 'Run svc login again and approve the new code in the console in time.',
        });
      continue;
    }
    if (error === 'access_denied')
      refused(answer, 'the sign-in was denied', 'Run svc login again if that was a mistake, and approve the code.');
    if (error === 'expired_token')
      refused(answer, 'the code expired before anyone approved it', 'Run svc login again and approve the new code.');
    refused(answer, 'the sign-in failed', 'Run svc login again.');
  }
}

/** A refresh (the refresh token is used once: keep the new pair). */
export async function refreshTokens(baseUrl: string, refresh: string): Promise<TokenPair> {
  const answer = await postForm(baseUrl, '/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: refresh,
    client_id: CLI_CLIENT_ID,
  });
  if (answer.status !== 200)
    refused(answer, 'your sign-in could not be renewed', 'Run svc login again (svc login --name NAME for a context).');
  const pair = parseTokens(answer.body);
  if (!pair)
    throw new CliFailure('the server answered the refresh with something else', {
      exit: EXIT.false,
      type: 'invalid_response',
      fix: 'Run svc login again.',
    });
  return pair;
}

/** RFC 7009: ends the sign-in the token belongs to. */
export async function revokeToken(baseUrl: string, token: string): Promise<void> {
  const answer = await postForm(baseUrl, '/oauth/revoke', { token, client_id: CLI_CLIENT_ID });
  if (answer.status !== 200) refused(answer, 'the server refused the sign-out', 'Try svc logout again.');
}
