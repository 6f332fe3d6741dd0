/**
 * A value the person running a command names by its environment variable (`svc mcp servers add
 * --secret-env VAR`), so that a secret never appears on a command line or in a shell's history.
 * Empty counts as unset.
 */
export function namedEnv(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === '' ? undefined : value;
}
