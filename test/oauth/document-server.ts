import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

/**
 * A client's own web site, for Client ID Metadata Documents: an https server on 127.0.0.1 with
 * the test certificate (test/fixtures/tls), serving what each path is told to, and counting how
 * often each path was fetched.
 */
const fixture = (name: string) =>
  readFileSync(fileURLToPath(new URL(`../fixtures/tls/${name}`, import.meta.url)), 'utf8');
export const LOOPBACK_CA = fixture('loopback.crt');

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  /** A JSON value (sent as application/json unless headers say otherwise), or raw text. */
  body?: unknown;
  /** Never answer (a document server that hangs). */
  hang?: true;
}

export interface DocumentServer {
  origin: string;
  url(path: string): string;
  /** What `path` answers from now on; a function gets the full URL of the path. */
  serve(path: string, answer: Answer | ((url: string) => Answer)): void;
  hits(path: string): number;
  close(): Promise<void>;
}

export async function documentServer(): Promise<DocumentServer> {
  const answers = new Map<string, Answer | ((url: string) => Answer)>();
  const hits = new Map<string, number>();
  let origin = '';
  const server: Server = createServer({ key: fixture('loopback.key'), cert: LOOPBACK_CA }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const found = answers.get(path);
    const answer = typeof found === 'function' ? found(`${origin}${req.url}`) : found;
    if (!answer) {
      res.writeHead(404).end();
      return;
    }
    if (answer.hang) return;
    const raw = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
    res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers }).end(raw);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    url: (path) => `${origin}${path}`,
    serve: (path, answer) => answers.set(path, answer),
    hits: (path) => hits.get(path) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A good document for `url` (its own client_id) with these redirect URIs. */
export const documentFor = (url: string, redirectUris: string[], extra: Record<string, unknown> = {}) => ({
  client_id: url,
  client_name: 'Browser Agent',
  redirect_uris: redirectUris,
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
  ...extra,
});
