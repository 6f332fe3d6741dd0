import type { TestFn } from 'ava';
import { ownerConsole, type Person } from './console.js';
import { serveInProcess, type ServedInProcess } from './in-process.js';
import { stopAndClean } from './process.js';

/** A service token made as an owner makes one in the console (POST /api/w/{wid}/service-tokens); its value. */
export async function serviceToken(owner: Person, name: string, scopes: string[], expiresInDays = 1): Promise<string> {
  const res = await owner.send('POST', '/service-tokens', { name, scopes, expiresInDays });
  if (res.status !== 201) throw new Error(`POST /service-tokens: ${res.status} ${res.text}`);
  return res.body.token as string;
}

/** A server in this process with its first-start owner signed in: what a route test starts from. */
export interface OwnedServer {
  readonly server: ServedInProcess;
  readonly owner: Person;
}

/**
 * Starts a server in this process before the file's tests (its owner signed in), then runs `then`
 * (ava runs a file's `before` hooks at once, so what needs the server goes there), and stops it
 * after them; the fields are set once `test.before` has run.
 */
export function ownedServer(
  test: TestFn,
  options: Parameters<typeof serveInProcess>[0] = {},
  then: (served: OwnedServer) => Promise<void> = async () => {},
): OwnedServer {
  const served = {} as { server: ServedInProcess; owner: Person };
  test.before(async () => {
    served.server = await serveInProcess(options);
    served.owner = await ownerConsole(served.server);
    await then(served);
  });
  test.after.always(() => stopAndClean(served.server));
  return served;
}
