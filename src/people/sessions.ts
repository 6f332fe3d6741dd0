import { AppError } from '../errors/app-error.js';
import { isoAt } from '../lib/clock.js';
import { secretHash } from '../lib/secrets.js';
import type { PeopleContext } from './context.js';
import { toPublicUser, type PublicUser, type SessionView } from './views.js';

/**
 * A person's console sessions: a 256-bit random secret in the cookie, of which the store keeps
 * only the hash; a session ends at its expiry or at sign-out, checked on every request.
 */

/** A session's public id: a prefix of its stored hash (the hash of its secret), enough to name it. */
const sessionId = (hash: string) => `ses_${hash.slice(0, 16)}`;

/** The person behind a session secret, or undefined when it is unknown or expired. */
export async function sessionUser(ctx: PeopleContext, secret: string): Promise<PublicUser | undefined> {
  const session = await ctx.repo.getSession(secretHash(secret));
  if (!session || Date.parse(session.expiresAt) <= ctx.clock.now()) return undefined;
  const user = await ctx.repo.getUser(session.userId);
  return user ? toPublicUser(user) : undefined;
}

/** The person's own console sessions, newest first; `current` marks the one asking. */
export async function sessionsOf(
  ctx: PeopleContext,
  uid: string,
  currentSecret: string,
): Promise<{ sessions: SessionView[] }> {
  const now = isoAt(ctx.clock.now());
  const current = secretHash(currentSecret);
  const sessions: SessionView[] = [];
  for (const { hash, session } of await ctx.repo.sessionsOf(uid)) {
    if (session.expiresAt <= now) continue;
    sessions.push({
      id: sessionId(hash),
      createdAt: session.createdAt,
      expiresAt: session.expiresAt,
      current: hash === current,
    });
  }
  sessions.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  return { sessions };
}

/**
 * Ends the person's other sessions (a browser left signed in elsewhere), or the one named by
 * `id`; never the one asking (signing out ends that).
 */
export async function endSessions(
  ctx: PeopleContext,
  uid: string,
  currentSecret: string,
  id?: string,
): Promise<{ sessionsEnded: number }> {
  const current = secretHash(currentSecret);
  return ctx.store.write(async () => {
    let sessionsEnded = 0;
    for (const { hash } of await ctx.repo.sessionsOf(uid)) {
      if (hash === current || (id !== undefined && sessionId(hash) !== id)) continue;
      await ctx.repo.removeSession(hash);
      sessionsEnded += 1;
    }
    if (id !== undefined && sessionsEnded === 0)
      throw new AppError('not_found', { message: `No other session of yours has the id ${id}.` });
    return { sessionsEnded };
  });
}

export async function signOut(ctx: PeopleContext, secret: string): Promise<void> {
  await ctx.store.write(() => ctx.repo.removeSession(secretHash(secret)));
}
