import { request, type Dispatcher } from 'undici';
import type { Clock } from '../lib/clock.js';
import { refusedBy } from '../lib/safe-target.js';
import { acceptableRedirect } from './redirects.js';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP 2025-11-25
 * "Client ID Metadata Documents"): a client whose `client_id` is an https URL describes itself in
 * the JSON document at that URL, instead of registering.
 * Rules:
 * - The URL: https, a path other than `/`, no dot segments, no fragment, no credentials, at most
 *   MAX_URL characters. Anything else that looks like a URL (http:, say) is refused, not looked up.
 * - The fetch goes through the vetted outbound dispatcher (lib/safe-target.ts: never link-local;
 *   loopback and private addresses only with `oauth.allowPrivateClientMetadata`), with one
 *   deadline for connect, headers and body (`oauth.clientMetadataTimeoutMs`), at most MAX_BYTES,
 *   no redirects followed, and a 200 with a JSON object required.
 * - The document: `client_id` equal to the URL (simple string comparison); `redirect_uris` a
 *   non-empty list, each https or http on a loopback address, the only redirect URIs the client
 *   gets; a public client (`token_endpoint_auth_method` absent or `none`, no `client_secret`);
 *   `grant_types` and `response_types`, when present, within what registration allows; a
 *   `client_name` of at most 200 characters (else the URL's host names it).
 * - A good document is cached as its answer's Cache-Control (max-age; no-store and no-cache:
 *   not kept) or Expires says, DEFAULT_TTL_MS when it says nothing, never longer than MAX_TTL_MS;
 *   a refused one is not cached. Concurrent authorizations of one client share one fetch.
 * - Nothing about the client is stored: its connections, codes and tokens name the URL.
 */
export const MAX_URL = 2048;
export const MAX_BYTES = 10_240;
export const DEFAULT_TTL_MS = 5 * 60_000;
export const MAX_TTL_MS = 24 * 3_600_000;
const MAX_ENTRIES = 1000;

export interface MetadataClient {
  clientId: string;
  clientName: string;
  /** The document's host, shown prominently on the consent page. */
  host: string;
  redirectUris: string[];
}

/** Why a URL client_id cannot be used; its message is shown to the person (error page) or the client (invalid_client). */
export class ClientMetadataProblem extends Error {}

/** Whether a client_id is meant as a URL (then it is a metadata document, never a registered id). */
export function isUrlClientId(clientId: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(clientId);
}

/**
 * Whether a client_id is one registration could have made (`mcp_` and 43 base64url characters):
 * any other that is not a URL names no client, and is refused without a lookup.
 */
export function isRegisteredClientId(clientId: string): boolean {
  return /^mcp_[A-Za-z0-9_-]{43}$/.test(clientId);
}

/** The rules on the URL itself: null when it may be fetched. */
export function clientIdUrlProblem(clientId: string): string | null {
  if (clientId.length > MAX_URL) return `the client_id URL is longer than ${MAX_URL} characters`;
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return 'the client_id is not a URL';
  }
  if (url.protocol !== 'https:') return 'a URL client_id must be https';
  if (url.username || url.password) return 'a URL client_id may not carry credentials';
  if (clientId.includes('#')) return 'a URL client_id may not have a fragment';
  if (url.pathname === '/' || url.pathname === '') return 'a URL client_id must have a path';
  const rawPath = clientId.slice(clientId.indexOf('/', 'https://'.length)).split(/[?#]/)[0]!;
  if (rawPath.split('/').some((s) => s === '.' || s === '..' || /^%2e(%2e)?$/i.test(s) || /^\.%2e$|^%2e\.$/i.test(s)))
    return 'a URL client_id may not have . or .. path segments';
  return null;
}

/** Seconds to keep an answer, from its caching headers: 0 when it may not be kept. */
export function freshnessMs(headers: Record<string, string | string[] | undefined>, nowMs: number): number {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : v);
  const control = (one(headers['cache-control']) ?? '').toLowerCase();
  const directives = new Map<string, string>();
  for (const part of control.split(',')) {
    const [k, v] = part.trim().split('=');
    if (k) directives.set(k.trim(), (v ?? '').trim().replace(/^"|"$/g, ''));
  }
  if (directives.has('no-store') || directives.has('no-cache')) return 0;
  const maxAge = directives.get('max-age');
  if (maxAge !== undefined) {
    const seconds = /^\d+$/.test(maxAge) ? Number(maxAge) : 0;
    return Math.min(seconds * 1000, MAX_TTL_MS);
  }
  const expires = one(headers.expires);
  if (expires !== undefined) {
    const at = Date.parse(expires);
    const date = Date.parse(one(headers.date) ?? '');
    if (Number.isNaN(at)) return 0;
    return Math.max(0, Math.min(at - (Number.isNaN(date) ? nowMs : date), MAX_TTL_MS));
  }
  return DEFAULT_TTL_MS;
}

/** The document's fields, checked; throws ClientMetadataProblem. */
export function readDocument(clientId: string, doc: unknown): MetadataClient {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc))
    throw new ClientMetadataProblem('The client metadata document is not a JSON object.');
  const d = doc as Record<string, unknown>;
  if (d.client_id !== clientId)
    throw new ClientMetadataProblem('The client metadata document names another client_id than its own URL.');
  const uris = d.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.some((u) => typeof u !== 'string'))
    throw new ClientMetadataProblem('The client metadata document has no redirect_uris.');
  const bad = (uris as string[]).find((u) => !acceptableRedirect(u));
  if (bad !== undefined)
    throw new ClientMetadataProblem(
      `The client metadata document's redirect URI ${bad.slice(0, 200)} is neither https nor http on a loopback address.`,
    );
  if (d.token_endpoint_auth_method !== undefined && d.token_endpoint_auth_method !== 'none')
    throw new ClientMetadataProblem(
      'A client known by its metadata document authenticates with token_endpoint_auth_method none (a public client).',
    );
  if (d.client_secret !== undefined || d.client_secret_expires_at !== undefined)
    throw new ClientMetadataProblem('A client metadata document may not carry a client secret.');
  for (const [field, allowed] of [
    ['grant_types', ['authorization_code', 'refresh_token']],
    ['response_types', ['code']],
  ] as const) {
    const v = d[field];
    if (v !== undefined && (!Array.isArray(v) || v.some((x) => !(allowed as readonly string[]).includes(x as string))))
      throw new ClientMetadataProblem(`The client metadata document's ${field} may hold only ${allowed.join(', ')}.`);
  }
  const host = new URL(clientId).host;
  if (d.client_name !== undefined && (typeof d.client_name !== 'string' || d.client_name.length > 200))
    throw new ClientMetadataProblem('The client metadata document’s client_name must be at most 200 characters.');
  const name = typeof d.client_name === 'string' && d.client_name.trim() !== '' ? d.client_name : host;
  return { clientId, clientName: name, host, redirectUris: uris as string[] };
}

async function fetchDocument(
  clientId: string,
  dispatcher: Dispatcher,
  timeoutMs: number,
): Promise<{ doc: unknown; headers: Record<string, string | string[] | undefined> }> {
  const signal = AbortSignal.timeout(timeoutMs);
  const answer = await request(clientId, {
    method: 'GET',
    dispatcher,
    signal,
    headers: { accept: 'application/json' },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  }).catch((err: unknown) => {
    const refused = refusedBy(err);
    throw new ClientMetadataProblem(
      refused
        ? `The client metadata document's address is ${refused.message}.`
        : signal.aborted
          ? 'The client metadata document did not arrive in time.'
          : 'The client metadata document could not be fetched.',
    );
  });
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of answer.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_BYTES)
        throw new ClientMetadataProblem(`The client metadata document is larger than ${MAX_BYTES} bytes.`);
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    answer.body.destroy();
    throw err instanceof ClientMetadataProblem
      ? err
      : new ClientMetadataProblem('The client metadata document did not arrive in time.');
  }
  if (answer.statusCode !== 200)
    throw new ClientMetadataProblem(
      `The client metadata document's address answered ${answer.statusCode} (redirects are not followed).`,
    );
  const type = String(answer.headers['content-type'] ?? '').toLowerCase();
  if (!/^application\/([a-z0-9.+-]*\+)?json\b/.test(type))
    throw new ClientMetadataProblem('The client metadata document is not served as application/json.');
  try {
    return { doc: JSON.parse(Buffer.concat(chunks).toString('utf8')), headers: answer.headers };
  } catch {
    throw new ClientMetadataProblem('The client metadata document is not JSON.');
  }
}

/**
 * Client ID Metadata Documents: the client a URL client_id stands for. Keeps a bounded in-memory
 * cache of documents (as long as their Cache-Control or Expires allows, at most MAX_TTL_MS) and
 * fetches one at a time per URL; reads and writes no store.
 */
export interface ClientMetadata {
  /**
   * The client a URL client_id stands for, from the cache while it is fresh, else fetched.
   * @throws ClientMetadataProblem when the URL or its document is refused.
   * @example
   *   const client = await metadata.resolve('https://app.example.com/oauth/client.json');
   *   client.redirectUris; // from the document only
   */
  resolve(clientId: string): Promise<MetadataClient>;
}

export function createClientMetadata(deps: {
  clock: Clock;
  dispatcher: Dispatcher;
  timeoutMs: number;
}): ClientMetadata {
  const cache = new Map<string, { client: MetadataClient; until: number }>();
  const inFlight = new Map<string, Promise<MetadataClient>>();

  const load = (clientId: string): Promise<MetadataClient> => {
    const running = inFlight.get(clientId);
    if (running) return running;
    const fetching = (async () => {
      const { doc, headers } = await fetchDocument(clientId, deps.dispatcher, deps.timeoutMs);
      const client = readDocument(clientId, doc);
      const now = deps.clock.now();
      const keep = freshnessMs(headers, now);
      cache.delete(clientId);
      if (keep > 0) {
        if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
        cache.set(clientId, { client, until: now + keep });
      }
      return client;
    })().finally(() => inFlight.delete(clientId));
    inFlight.set(clientId, fetching);
    return fetching;
  };

  return {
    async resolve(clientId: string): Promise<MetadataClient> {
      const problem = clientIdUrlProblem(clientId);
      if (problem) throw new ClientMetadataProblem(`${problem[0]!.toUpperCase()}${problem.slice(1)}.`);
      const cached = cache.get(clientId);
      if (cached && cached.until > deps.clock.now()) return cached.client;
      return load(clientId);
    },
  };
}
