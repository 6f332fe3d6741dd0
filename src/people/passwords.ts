import { hash, verify } from '@node-rs/argon2';

/**
 * Passwords are hashed with argon2id (OWASP's first choice; parameters above its minimum of
 * 19 MiB, 2 passes). Unknown accounts are checked against a fixed dummy hash so that a wrong
 * email and a wrong password take the same time.
 */
const options = {
  algorithm: 2 /* Algorithm.Argon2id (a const enum, not importable under verbatimModuleSyntax) */,
  memoryCost: 19456,
  timeCost: 2,
  parallelism: 1,
} as const;

let dummy: Promise<string> | undefined;

export function hashPassword(password: string): Promise<string> {
  return hash(password, options);
}

export async function verifyPassword(stored: string | undefined, password: string): Promise<boolean> {
  const target = stored ?? (await (dummy ??= hash('not-a-password-of-anyone', options)));
  try {
    const ok = await verify(target, password);
    return ok && stored !== undefined;
  } catch {
    return false;
  }
}
