import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import Joi from 'joi';
import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import { AppError } from '../errors/app-error.js';
import { caller } from '../http/auth/callers.js';
import { member } from '../http/auth/permission.js';
import { sessionStrategies } from '../http/auth/session.js';
import type { Guards } from '../http/guards.js';
import { wid } from '../http/params.js';
import { consentPage, consentPolicy, errorPage, ERROR_PAGE_POLICY } from './pages.js';
import { isUrlClientId } from './client-metadata.js';
import { PUBLIC_CORS } from './cors.js';
import { type AuthorizeRequest, type OAuth } from './service.js';

/**
 * The authorization server's routes (docs/mcp-oauth.md#oauth-for-mcp-clients): discovery, registration, the
 * authorize and consent pages, token and revocation; and the console's list of connections.
 * Rules:
 * - Registration, token and revocation answer errors as `{ error, error_description }` with
 *   Cache-Control: no-store (the pipeline's 'oauth' envelope); token answers are no-store too.
 * - /oauth/authorize: a bad client or redirect URI is an error page (never a redirect); without
 *   a session the person signs in first and comes back; then other problems go back to the
 *   application with `error`, `state` and `iss`, and a good request shows the consent page.
 * - The consent form carries the request signed with a key of this deployment and bound to the
 *   signed-in person, valid CONSENT_TTL_MS and used once (its nonce is kept); the session cookie is SameSite=Lax (no cross-site post
 *   carries it) and the post must come from this origin.
 * - A client_id that is a URL (a Client ID Metadata Document) is fetched only for a signed-in
 *   person: a stranger cannot make this deployment fetch addresses.
 * - CORS (cors.ts): the metadata, registration, token and revocation endpoints answer any
 *   origin, without credentials (browser-based MCP clients); /oauth/authorize and the consent
 *   page answer none (they are pages a person uses, and take the session cookie).
 */
const CONSENT_TTL_MS = 10 * 60_000;

function basicAuth(request: Request): { id: string; secret: string } | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string' || !/^basic /i.test(header)) return null;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new AppError('invalid_client', { message: 'The Basic credentials are malformed.' });
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon)), secret: decodeURIComponent(decoded.slice(colon + 1)) };
  } catch {
    throw new AppError('invalid_client', { message: 'The Basic credentials are malformed.' });
  }
}

/** The consent form's request, signed with a key of this deployment, and opened again for the same person. */
interface ConsentSeal {
  sign(body: object): string;
  /** The request, if this deployment signed it for this person and it has not expired (else 403 forbidden). */
  open(token: string, userId: string): AuthorizeRequest;
}

function consentSeal(consentKey: Buffer): ConsentSeal {
  const sign = (body: object): string => {
    const data = Buffer.from(JSON.stringify(body)).toString('base64url');
    return `${data}.${createHmac('sha256', consentKey).update(data).digest('base64url')}`;
  };
  const open = (token: string, userId: string): AuthorizeRequest => {
    const [data, mac] = token.split('.');
    const expected = createHmac('sha256', consentKey)
      .update(data ?? '')
      .digest('base64url');
    if (!data || !mac || mac.length !== expected.length || !timingSafeEqual(Buffer.from(mac), Buffer.from(expected))) {
      throw new AppError('forbidden', {
        message: 'This consent form was not issued here.',
        fix: 'Start the connection again from the application.',
      });
    }
    const body = JSON.parse(Buffer.from(data, 'base64url').toString('utf8')) as AuthorizeRequest & {
      userId: string;
      exp: number;
    };
    if (body.userId !== userId || body.exp < Date.now()) {
      throw new AppError('forbidden', {
        message: 'This consent form has expired or belongs to another person.',
        fix: 'Start the connection again from the application.',
      });
    }
    return body;
  };
  return { sign, open };
}

/** What the authorization pages are given. */
interface AuthorizeDeps {
  oauth: OAuth;
  issuer: () => string;
  seal: ConsentSeal;
}

/** Back to the application's redirect URI with these parameters and `iss`. */
function backTo(issuer: () => string) {
  return (h: ResponseToolkit, redirectUri: string, params: Record<string, string | null>) => {
    const url = new URL(redirectUri);
    for (const [k, v] of Object.entries({ ...params, iss: issuer() })) if (v !== null) url.searchParams.set(k, v);
    return h.redirect(url.toString());
  };
}

/** GET /oauth/authorize: the error page, the way to sign in, an error back to the application, or the consent page. */
function authorizePage({ oauth, issuer, seal }: AuthorizeDeps) {
  const back = backTo(issuer);
  const { sign } = seal;
  return async (request: Request, h: ResponseToolkit) => {
    const q = request.query as Record<string, string | undefined>;
    const toSignIn = () => h.redirect(`/login?next=${encodeURIComponent(request.url.pathname + request.url.search)}`);
    if (!request.auth.isAuthenticated && q.client_id !== undefined && isUrlClientId(q.client_id)) return toSignIn();
    const target = await oauth.clientAndRedirect(q.client_id, q.redirect_uri);
    if ('problem' in target)
      return h
        .response(errorPage(target.problem))
        .code(400)
        .type('text/html; charset=utf-8')
        .header('content-security-policy', ERROR_PAGE_POLICY);
    // Only a signed-in person is ever sent back to the application, errors included: a
    // stranger cannot use this route to bounce anyone to a registered address.
    if (!request.auth.isAuthenticated) return toSignIn();
    const state = q.state ?? null;
    const fail = (error: string, description: string) =>
      back(h, target.redirectUri, { error, error_description: description, state });
    if (q.response_type !== 'code') return fail('unsupported_response_type', 'response_type must be code');
    if (!q.code_challenge || !/^[A-Za-z0-9._~-]{43,128}$/.test(q.code_challenge))
      return fail('invalid_request', 'a PKCE code_challenge is required');
    if (q.code_challenge_method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256');
    if (q.resource !== undefined && q.resource !== oauth.resourceUrl())
      return fail('invalid_target', `resource must be ${oauth.resourceUrl()}`);
    const scope = oauth.grantedScope(q.scope);
    if ('problem' in scope) return fail('invalid_scope', scope.problem);
    const user = caller(request, 'session').user;
    const req: AuthorizeRequest = {
      clientId: target.client.clientId,
      redirectUri: target.redirectUri,
      challenge: q.code_challenge,
      state,
      resource: oauth.resourceUrl(),
      scope: scope.scope,
      ...(target.client.host ? { clientName: target.client.clientName } : {}),
    };
    const html = consentPage({
      clientName: target.client.clientName,
      ...(target.client.host ? { clientHost: target.client.host } : {}),
      redirectHost: new URL(target.redirectUri).host,
      person: user.email,
      request: sign({
        ...req,
        userId: user.id,
        exp: Date.now() + CONSENT_TTL_MS,
        nonce: randomBytes(16).toString('base64url'),
      }),
      agents: await oauth.connectable(user.id),
    });
    // Referrer-Policy same-origin (not the deployment's no-referrer): under no-referrer a
    // browser posts a form with `Origin: null`, and the post below could not tell this page
    // from another site's. Nothing of this page's address reaches another origin either way.
    return h
      .response(html)
      .type('text/html; charset=utf-8')
      .header('content-security-policy', consentPolicy(new URL(target.redirectUri).origin))
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'same-origin');
  };
}

/** POST /oauth/authorize: the person's decision on the consent form, back to the application. */
function consentDecision({ oauth, issuer, seal }: AuthorizeDeps) {
  const back = backTo(issuer);
  const { open } = seal;
  return async (request: Request, h: ResponseToolkit) => {
    // A form post from this origin only (browsers send Origin on form posts).
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== new URL(issuer()).origin)
      throw new AppError('csrf', { message: 'The consent was posted from another site.' });
    const user = caller(request, 'session').user;
    const body = request.payload as { request: string; agent?: string; decision: 'allow' | 'deny' };
    const req = open(body.request, user.id);
    if (body.decision === 'deny')
      return back(h, req.redirectUri, {
        error: 'access_denied',
        error_description: 'the person declined',
        state: req.state,
      });
    if (!body.agent)
      throw new AppError('invalid_request', {
        details: { errors: [{ field: 'agent', message: 'choose the agent to connect' }] },
      });
    const code = await oauth.grant(req, user.id, body.agent);
    return back(h, req.redirectUri, { code, state: req.state });
  };
}

export const oauthRoutes: Plugin<{
  oauth: OAuth;
  production: boolean;
  guards: Guards;
  consentKey: Buffer;
  issuer: () => string;
}> = {
  name: 'svc-oauth',
  register(server, { oauth, production, guards, consentKey, issuer }) {
    const session = { strategies: sessionStrategies(production) };
    const oauthErrors = { svc: { errorEnvelope: 'oauth' as const } };
    const form = Joi.object().pattern(/./, Joi.string().allow('')).unknown(true);

    const pages: AuthorizeDeps = { oauth, issuer, seal: consentSeal(consentKey) };

    server.route([
      {
        method: 'GET',
        path: '/.well-known/oauth-authorization-server',
        options: { auth: false, cors: PUBLIC_CORS },
        handler: () => oauth.metadata(),
      },
      {
        method: 'POST',
        path: '/oauth/register',
        options: {
          auth: false,
          cors: PUBLIC_CORS,
          ext: { onPreAuth: guards.publicRoute('public') },
          plugins: oauthErrors,
        },
        async handler(request, h) {
          const body = request.payload;
          if (!body || typeof body !== 'object' || Array.isArray(body))
            throw new AppError('invalid_client_metadata', { message: 'The body must be a JSON object.' });
          return h
            .response(await oauth.register(body as Record<string, unknown>))
            .code(201)
            .header('cache-control', 'no-store');
        },
      },
      {
        method: 'GET',
        path: '/oauth/authorize',
        options: {
          auth: { ...session, mode: 'try' },
          validate: { query: Joi.object().pattern(/./, Joi.string().allow('')) },
        },
        handler: authorizePage(pages),
      },
      {
        method: 'POST',
        path: '/oauth/authorize',
        options: {
          auth: session,
          validate: {
            payload: Joi.object({
              request: Joi.string().max(8192).required(),
              agent: Joi.string().max(64),
              decision: Joi.string().valid('allow', 'deny').required(),
            }),
          },
        },
        handler: consentDecision(pages),
      },
      {
        method: 'POST',
        path: '/oauth/token',
        options: { auth: false, cors: PUBLIC_CORS, plugins: oauthErrors, validate: { payload: form } },
        async handler(request, h) {
          const tokens = await oauth.token(request.payload as Record<string, string | undefined>, basicAuth(request));
          return h.response(tokens).header('cache-control', 'no-store').header('pragma', 'no-cache');
        },
      },
      {
        method: 'POST',
        path: '/oauth/revoke',
        options: { auth: false, cors: PUBLIC_CORS, plugins: oauthErrors, validate: { payload: form } },
        async handler(request, h) {
          await oauth.revoke(request.payload as Record<string, string | undefined>, basicAuth(request));
          return h.response({}).header('cache-control', 'no-store');
        },
      },
      {
        method: 'GET',
        path: '/api/w/{wid}/connections',
        // Each person their own connections; owners and admins every one.
        options: { auth: session, app: { permission: 'workspace.read' }, validate: { params: Joi.object({ wid }) } },
        async handler(request) {
          const { wid: w, user, role } = member(request);
          return { data: await oauth.connections(w, user.id, role === 'owner' || role === 'admin'), next: null };
        },
      },
      {
        method: 'DELETE',
        path: '/api/w/{wid}/connections/{cnx}',
        options: {
          auth: session,
          app: { permission: 'workspace.read' },
          ext: { onPreAuth: guards.consoleWrite },
          validate: { params: Joi.object({ wid, cnx: Joi.string().max(64).required() }) },
        },
        handler(request) {
          const { wid: w, user, role } = member(request);
          const { cnx } = request.params as { cnx: string };
          return oauth.endConnection(w, cnx, user.id, role === 'owner' || role === 'admin');
        },
      },
    ]);
  },
};
