import { call, csrf, ownerSession, signIn, type Json, type Reply } from './http.js';
import type { Served } from './process.js';
import { withStore } from './store.js';

/**
 * The console API (/api/w/{wid}/...) as one signed-in person uses it: a client bound to a server,
 * a workspace and a session cookie, and the workspace ledger read page by page.
 */

type Server = Pick<Served, 'url'>;

export interface LedgerRecord {
  index: number;
  id: string;
  at: string;
  workspaceId: string;
  actor: string;
  kind: string;
  subject: string;
  data: Record<string, Json>;
}

/** Throws (test setup failed) unless the answer has the expected status; returns it. */
export function expectStatus(res: Reply, status: number, what: string): Reply {
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${res.text}`);
  return res;
}

/**
 * Every page of a workspace's ledger, read with GET /api/w/{wid}/ledger?after=INDEX&limit=LIMIT
 * from after=-1 until `next` is null: the records in order, and each page's answer.
 */
export async function ledgerPages(
  server: Server,
  wid: string,
  cookie: string,
  limit = 200,
): Promise<{ records: LedgerRecord[]; pages: Reply[] }> {
  const records: LedgerRecord[] = [];
  const pages: Reply[] = [];
  let after: number | null = -1;
  while (after !== null) {
    const res: Reply = expectStatus(
      await call(server.url, 'GET', `/api/w/${wid}/ledger?after=${after}&limit=${limit}`, { headers: { cookie } }),
      200,
      'ledger',
    );
    pages.push(res);
    records.push(...(res.body.data as LedgerRecord[]));
    after = res.body.next as number | null;
  }
  return { records, pages };
}

/** Every record of a workspace's ledger, read page by page through GET /api/w/{wid}/ledger. */
export async function ledgerRecords(server: Server, wid: string, cookie: string): Promise<LedgerRecord[]> {
  return (await ledgerPages(server, wid, cookie)).records;
}

export interface ConsoleClient {
  url: string;
  wid: string;
  cookie: string;
  /** The path of a workspace route: `/api/w/{wid}${path}`. */
  api(path: string): string;
  /** GET a workspace route with the session cookie. */
  get(path: string): Promise<Reply>;
  /** A console write to a workspace route: the session cookie and the CSRF header, and the JSON body if given. */
  send(method: string, path: string, json?: unknown): Promise<Reply>;
  /** Every record of the workspace's ledger, as this person reads it. */
  ledger(): Promise<LedgerRecord[]>;
  /** The signed-in person's user id (GET /api/me). */
  userId(): Promise<string>;
}

export function consoleClient(server: Server, wid: string, cookie: string): ConsoleClient {
  const api = (path: string) => `/api/w/${wid}${path}`;
  return {
    url: server.url,
    wid,
    cookie,
    api,
    get: (path) => call(server.url, 'GET', api(path), { headers: { cookie } }),
    send: (method, path, json) =>
      call(server.url, method, api(path), { headers: { cookie, ...csrf }, ...(json === undefined ? {} : { json }) }),
    ledger: () => ledgerRecords(server, wid, cookie),
    userId: async () =>
      expectStatus(await call(server.url, 'GET', '/api/me', { headers: { cookie } }), 200, 'me').body.user.id as string,
  };
}

/** A console client and the user id of the person it is signed in as. */
export type Person = ConsoleClient & { id: string };

/** The first-start owner in the first workspace (see ownerSession). */
export async function ownerConsole(server: Served): Promise<Person> {
  const client = consoleClient(server, server.boot.workspaceId!, await ownerSession(server));
  return { ...client, id: await client.userId() };
}

/**
 * A second workspace, made in the server's store, and its owner signed in: to check that one
 * workspace never sees another's data.
 */
export async function otherWorkspace(server: Served): Promise<Person> {
  const email = 'owner@other.example';
  const password = 'other-password-1';
  const made = await withStore(server.dataDir, (app) =>
    app.services.people.createWorkspace({ name: 'Other', ownerEmail: email, ownerPassword: password }),
  );
  return { ...consoleClient(server, made.workspaceId, await signIn(server.url, email, password)), id: made.ownerId };
}
