import type { Listening } from './serving.js';

/** What `svc serve --json` prints once it listens: the address, and the first start's owner if this start made one. */
export function listeningJson({ address, metricsUrl, boot }: Listening): Record<string, unknown> {
  return {
    listening: address,
    ...(metricsUrl ? { metrics: metricsUrl } : {}),
    ...(boot ? { workspaceId: boot.workspaceId, owner: { email: boot.email, password: boot.password } } : {}),
  };
}

/** What `svc serve` prints on a terminal when this start made the first workspace's owner (nothing otherwise). */
export function firstStartText({ boot }: Listening): string | null {
  if (!boot) return null;
  return [
    '',
    `  Workspace "Default" created (${boot.workspaceId}).`,
    `  Owner: ${boot.email}`,
    `  One-time password: ${boot.password}`,
    '  It is shown this once and stored only as a hash. Sign in at /login and choose your own.',
    `  Lost it? \`svc owner reset-password --email ${boot.email} --local\` prints a new one.`,
    '',
  ].join('\n');
}
