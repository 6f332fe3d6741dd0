import { AppError } from '../errors/app-error.js';
import { isoAt, type Clock } from '../lib/clock.js';
import type { IdSource } from '../lib/ids.js';
import { secretHash } from '../lib/secrets.js';
import type { Store } from '../store/index.js';
import type { OAuthClientRecord } from './records.js';
import { acceptableRedirect } from './redirects.js';
import type { OAuthRepo } from './repo.js';
import { AUTH_METHODS, type AuthMethod } from './token.js';

/**
 * Dynamic client registration (RFC 7591), checked in order: redirect URIs (https, or http on a
 * loopback address, no fragment), the token endpoint's auth method, the client's name, and the
 * grant and response types. A client with a secret gets it once; the store keeps its hash.
 */

/** What POST /oauth/register may send (anything: each field is checked here). */
export interface RegistrationInput {
  client_name?: unknown;
  redirect_uris?: unknown;
  token_endpoint_auth_method?: unknown;
  grant_types?: unknown;
  response_types?: unknown;
}

/** The registered client as RFC 7591 answers it. */
export interface ClientRegistration {
  client_id: string;
  client_secret?: string;
  client_secret_expires_at?: number;
  client_id_issued_at: number;
  client_name: string;
  redirect_uris: string[];
  token_endpoint_auth_method: AuthMethod;
  grant_types: string[];
  response_types: string[];
}

function checkRedirectUris(uris: unknown): string[] {
  if (!Array.isArray(uris) || uris.length === 0 || uris.some((u) => typeof u !== 'string')) {
    throw new AppError('invalid_redirect_uri', { message: 'redirect_uris must be a non-empty array of URLs.' });
  }
  const bad = (uris as string[]).find((u) => !acceptableRedirect(u));
  if (bad !== undefined)
    throw new AppError('invalid_redirect_uri', {
      message: `${bad} is neither https nor http on a loopback address (or it has a fragment).`,
    });
  return uris as string[];
}

function checkAuthMethod(method: unknown): AuthMethod {
  if (typeof method !== 'string' || !(AUTH_METHODS as readonly string[]).includes(method)) {
    throw new AppError('invalid_client_metadata', {
      message: `token_endpoint_auth_method must be one of ${AUTH_METHODS.join(', ')}.`,
    });
  }
  return method as AuthMethod;
}

function checkClientName(name: unknown): void {
  if (name !== undefined && (typeof name !== 'string' || name.length > 200)) {
    throw new AppError('invalid_client_metadata', {
      message: 'client_name must be a string of at most 200 characters.',
    });
  }
}

function checkGrantAndResponseTypes(input: RegistrationInput): void {
  for (const [field, allowed] of [
    ['grant_types', ['authorization_code', 'refresh_token']],
    ['response_types', ['code']],
  ] as const) {
    const v = input[field];
    if (v !== undefined && (!Array.isArray(v) || v.some((x) => !(allowed as readonly string[]).includes(x)))) {
      throw new AppError('invalid_client_metadata', { message: `${field} may hold only ${allowed.join(', ')}.` });
    }
  }
}

/** Registers a client (writes `oauthClients`) and answers it, with its secret once. */
export async function registerClient(
  deps: { store: Store; repo: OAuthRepo; clock: Clock; ids: IdSource },
  input: RegistrationInput,
): Promise<ClientRegistration> {
  const uris = checkRedirectUris(input.redirect_uris);
  const method = checkAuthMethod(input.token_endpoint_auth_method ?? 'none');
  checkClientName(input.client_name);
  checkGrantAndResponseTypes(input);
  const secret = method === 'none' ? null : deps.ids.secret('mcs');
  const client: OAuthClientRecord = {
    clientId: deps.ids.secret('mcp'),
    clientName: typeof input.client_name === 'string' ? input.client_name : 'MCP client',
    redirectUris: uris,
    authMethod: method,
    secretHash: secret ? secretHash(secret) : null,
    createdAt: isoAt(deps.clock.now()),
  };
  await deps.store.write(() => deps.repo.putClient(client));
  return {
    client_id: client.clientId,
    ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
    client_id_issued_at: Math.floor(Date.parse(client.createdAt) / 1000),
    client_name: client.clientName,
    redirect_uris: client.redirectUris,
    token_endpoint_auth_method: client.authMethod,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  };
}
