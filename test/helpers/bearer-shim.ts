import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback reverse proxy in front of the server, for clients that cannot send headers (the MCP
 * conformance suite's CLI): it adds `Authorization: Bearer <credential>` to requests for /mcp that
 * carry none, and passes everything else through byte for byte, Host and Origin included, as a
 * TLS-terminating proxy in front of an appliance would. The server runs with its base URL set to
 * the shim's address, so that the Host the client sends is the deployment's own.
 */
export interface BearerShim {
  /** http://127.0.0.1:PORT, the address clients use (the server's SVC_BASE_URL). */
  url: string;
  /** The server behind it (set once it is started). */
  target: string | null;
  /** The bearer added to /mcp requests that have none. */
  credential: string | null;
  close(): Promise<void>;
}

export async function startBearerShim(): Promise<BearerShim> {
  const shim: BearerShim = { url: '', target: null, credential: null, close: async () => {} };
  const http = createServer((req, res) => {
    if (!shim.target) {
      res.writeHead(503).end();
      return;
    }
    const target = new URL(shim.target);
    const headers: IncomingHttpHeaders = { ...req.headers };
    if (req.url?.startsWith('/mcp') && !headers.authorization && shim.credential)
      headers.authorization = `Bearer ${shim.credential}`;
    const upstream = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  shim.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  shim.close = () =>
    new Promise<void>((resolve) => {
      http.closeAllConnections();
      http.close(() => resolve());
    });
  return shim;
}
