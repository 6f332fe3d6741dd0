import Cookie from '@hapi/cookie';
import type { Server } from '@hapi/hapi';
import { SESSION, SESSION_HOST, credentials, type SessionUser } from './callers.js';

/**
 * Session cookie (docs/security.md#security-model): `__Host-sid` in production, `sid` on a local http server
 * (which also accepts `__Host-sid`). HttpOnly, SameSite=Lax, Secure in production. The cookie
 * seals a random session secret; the store holds only its hash and is checked on every request,
 * so signing out or removing a member ends the session at once. Bearer tokens are not read here.
 */
export interface SessionOptions {
  production: boolean;
  /** Secure cookies: in production, and wherever the public address is https. */
  secure: boolean;
  cookiePassword: string;
  ttlMs: number;
  /** The people service: the person a live session secret belongs to, read from the store at each request. */
  people: { sessionUser(secret: string): Promise<SessionUser | undefined> };
}

export interface SessionCookie {
  sid: string;
}

export function sessionCookieName(production: boolean): string {
  return production ? '__Host-sid' : 'sid';
}

/** The strategies a console route names (one caller kind: the session cookie). */
export function sessionStrategies(production: boolean): string[] {
  return production ? [SESSION] : [SESSION, SESSION_HOST];
}

/**
 * What the cookie strategy is given when the session could not be looked up (the store is down):
 * not a caller. @hapi/cookie treats any error from `validate` as an invalid session and clears the
 * cookie; so the lookup's error is carried past it instead, and thrown at onCredentials, before
 * any route or scope sees the request: 503 store_unavailable, the cookie kept.
 */
interface Unresolved {
  unresolved: unknown;
}

export async function registerSession(server: Server, options: SessionOptions): Promise<void> {
  await server.register(Cookie);
  const validate = async (_request: unknown, session: unknown) => {
    const sid = (session as Partial<SessionCookie> | undefined)?.sid;
    if (typeof sid !== 'string' || !sid) return { isValid: false };
    let user: SessionUser | undefined;
    try {
      user = await options.people.sessionUser(sid);
    } catch (err) {
      return { isValid: true, credentials: { unresolved: err } satisfies Unresolved };
    }
    if (!user) return { isValid: false };
    return { isValid: true, credentials: credentials({ kind: 'session', user, secret: sid }) };
  };
  server.ext('onCredentials', (request, h) => {
    const found = request.auth.credentials as Partial<Unresolved> | null;
    if (found && 'unresolved' in found) throw found.unresolved;
    return h.continue;
  });
  const cookie = (name: string, secure: boolean) => ({
    name,
    password: options.cookiePassword,
    isSecure: secure,
    isHttpOnly: true,
    isSameSite: 'Lax' as const,
    path: '/',
    ttl: options.ttlMs,
    clearInvalid: true,
    strictHeader: true,
  });
  server.auth.strategy(SESSION, 'cookie', {
    cookie: cookie(sessionCookieName(options.production), options.secure),
    validate,
  });
  if (!options.production) {
    server.auth.strategy(SESSION_HOST, 'cookie', {
      cookie: cookie('__Host-sid', true),
      validate,
      requestDecoratorName: 'cookieAuthHost',
    });
  }
}
