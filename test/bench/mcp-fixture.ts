/**
 * The MCP benchmark's server, set up through the real product as an owner and an MCP client would:
 * - `svc serve` from dist/ on a first start (info-level request logs), its owner's session after
 *   the one-time password is replaced (helpers/http.ts ownerSession);
 * - an agent whose mandate allows `mcp.files.echo` on any domain, and its key;
 * - the upstream fixture added as `files` (with its bearer secret and an allow-list of `echo`), so
 *   that `files__echo` at /mcp is forwarded to it;
 * - OAuth connections of that agent, each as an MCP client makes one: registration, the authorize
 *   request with PKCE S256 and `resource`, the consent page posted back as the signed-in owner
 *   (cookie and Origin), and the code exchanged at POST /oauth/token.
 * Rate limits are lifted: the benchmark measures the work of each request, not the limiter.
 */
import { createHash, randomBytes } from 'node:crypto';
import { call, csrf, ownerSession } from '../helpers/http.js';
import { BIN, cleanEnv } from '../helpers/process.js';
import { startChild, type Child } from './children.js';
import type { ServeBoot } from './gate-fixture.js';

const UNLIMITED = '100000000';
/** The upstream's name in the workspace, and the one tool the agent's mandate allows. */
export const UPSTREAM_NAME = 'files';
export const TOOL = 'echo';
const REDIRECT_URI = 'http://127.0.0.1:53682/callback';

export interface McpBench {
  server: Child<ServeBoot>;
  workspaceId: string;
  agentId: string;
  /** The agent's key (`Authorization: Bearer`). */
  key: string;
  /** The owner's session cookie. */
  cookie: string;
}

/** One OAuth connection: its client and its current pair of tokens (the refresh token is spent by each grant). */
export interface Connection {
  clientId: string;
  access: string;
  refresh: string;
}

const expect = (what: string, reply: { status: number; text: string }, status: number) => {
  if (reply.status !== status)
    throw new Error(`${what}: expected ${status}, got ${reply.status} ${reply.text.slice(0, 400)}`);
};

export async function startMcpBench(
  dataDir: string,
  upstream: { url: string; secret: string },
  nodeFlags: string[] = [],
): Promise<McpBench> {
  const env = cleanEnv({
    SVC_LOG_LEVEL: 'info',
    SVC_GATE_RATE_PER_MINUTE: UNLIMITED,
    SVC_PUBLIC_RATE_PER_MINUTE: UNLIMITED,
    SVC_SIGNIN_RATE_PER_MINUTE: UNLIMITED,
    // The bench's upstream listens on loopback.
    SVC_MCP_ALLOW_PRIVATE_UPSTREAMS: '1',
  });
  const server = await startChild<ServeBoot>(
    [...nodeFlags, BIN, 'serve', '--json', '--data-dir', dataDir, '--port', '0'],
    env,
  );
  try {
    const cookie = await ownerSession(server);
    const wid = server.boot.workspaceId!;
    const headers = { ...csrf, cookie };
    const agent = await call(server.url, 'POST', `/api/w/${wid}/agents`, { headers, json: { name: 'mcp-bench-bot' } });
    expect('agent', agent, 201);
    const rules = [{ actions: [`mcp.${UPSTREAM_NAME}.${TOOL}`], domains: ['*'] }];
    expect(
      'mandate',
      await call(server.url, 'PUT', `/api/w/${wid}/agents/${agent.body.id}/mandate`, {
        headers,
        json: { rules, confirmBroaden: true },
      }),
      200,
    );
    const minted = await call(server.url, 'POST', `/api/w/${wid}/agents/${agent.body.id}/keys`, { headers, json: {} });
    expect('key', minted, 201);
    const added = await call(server.url, 'POST', `/api/w/${wid}/mcp-servers`, {
      headers,
      json: { name: UPSTREAM_NAME, url: upstream.url, secret: upstream.secret, allowTools: [TOOL] },
    });
    expect('upstream', added, 201);
    return { server, workspaceId: wid, agentId: agent.body.id as string, key: minted.body.key as string, cookie };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

const form = (fields: Record<string, string>) => ({
  body: new URLSearchParams(fields).toString(),
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
});

/** A client registered, the agent connected by the owner's consent, and the code exchanged: the first pair of tokens. */
export async function connect(
  bench: { server: { url: string }; cookie: string; agentId: string },
  name: string,
): Promise<Connection> {
  const base = bench.server.url;
  const registered = await call(base, 'POST', '/oauth/register', {
    json: { client_name: name, redirect_uris: [REDIRECT_URI] },
  });
  expect('registration', registered, 201);
  const clientId = registered.body.client_id as string;

  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    state,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    resource: `${base}/mcp`,
  });
  const page = await call(base, 'GET', `/oauth/authorize?${query}`, { headers: { cookie: bench.cookie } });
  expect('consent page', page, 200);
  const request = /name="request" value="([^"]+)"/.exec(page.text)?.[1];
  if (!request) throw new Error('the consent page has no form');
  const consent = form({ request: request.replaceAll('&amp;', '&'), decision: 'allow', agent: bench.agentId });
  const posted = await call(base, 'POST', '/oauth/authorize', {
    body: consent.body,
    headers: { ...consent.headers, cookie: bench.cookie, origin: new URL(base).origin },
  });
  expect('consent', posted, 302);
  const back = new URL(String(posted.headers.location));
  if (back.searchParams.get('state') !== state || !back.searchParams.get('code'))
    throw new Error(`consent redirected to ${back}`);

  const exchange = form({
    grant_type: 'authorization_code',
    code: back.searchParams.get('code')!,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
  });
  const tokens = await call(base, 'POST', '/oauth/token', exchange);
  expect('code exchange', tokens, 200);
  if (!String(tokens.body.refresh_token).startsWith('art_') || !String(tokens.body.access_token).startsWith('aat_'))
    throw new Error(`code exchange answered ${tokens.text}`);
  return { clientId, access: tokens.body.access_token, refresh: tokens.body.refresh_token };
}

/** The refresh grant's form body: what the benchmark sends, and what its baseline is sent. */
export const refreshForm = (c: Connection) =>
  new URLSearchParams({ grant_type: 'refresh_token', refresh_token: c.refresh, client_id: c.clientId }).toString();
