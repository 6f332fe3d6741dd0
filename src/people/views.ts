import type { Role, UserRecord } from './records.js';

/** A person and their workspaces as the service answers them: never a secret or a hash. */

export interface PublicUser {
  id: string;
  email: string;
  name: string;
  /** The password was chosen by someone else (the first start's one-time password): change it. */
  mustChangePassword: boolean;
  /** Two-factor is on: sign-in asks for a code. */
  totp: boolean;
}

export interface WorkspaceView {
  id: string;
  name: string;
  role: Role;
}

/** One of a person's console sessions as they see it: never its secret, nor its stored hash whole. */
export interface SessionView {
  id: string;
  createdAt: string;
  expiresAt: string;
  current: boolean;
}

/** Two-factor is on once a code confirmed the enrolment. */
export const totpOn = (user: UserRecord | undefined): boolean => typeof user?.totp?.confirmedAt === 'string';

export function toPublicUser(user: UserRecord): PublicUser {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    mustChangePassword: user.mustChangePassword === true,
    totp: totpOn(user),
  };
}
