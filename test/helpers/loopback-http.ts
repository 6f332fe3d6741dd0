import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

/**
 * An HTTP server on 127.0.0.1 (a free port) for a test's fixture: its `/mcp` URL, and a close
 * that drops every connection. With `tls`, https with the tests' self-signed certificate
 * (test/fixtures/tls), which nothing trusts unless told to.
 */
export async function listenLoopback(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  options: { tls?: boolean } = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const file = (name: string) => readFileSync(fileURLToPath(new URL(`../fixtures/tls/${name}`, import.meta.url)));
  const http = options.tls
    ? createHttpsServer({ cert: file('loopback.crt'), key: file('loopback.key') }, handle)
    : createServer(handle);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
