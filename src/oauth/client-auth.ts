import { timingSafeEqual } from 'node:crypto';
import { AppError, invalidField } from '../errors/app-error.js';
import { secretHash } from '../lib/secrets.js';
import type { OAuthClientRecord } from './records.js';
import { clientIdUrlProblem, isRegisteredClientId, isUrlClientId, MAX_URL } from './client-metadata.js';
import type { OAuthRepo } from './repo.js';

/**
 * The client at the token and revocation endpoints, authenticated as it registered (form fields
 * or HTTP Basic). A URL client (client-metadata.ts) is public, and nothing is fetched here: its
 * codes and tokens are bound to the URL.
 */

/** Whether two hashes are equal, in a time that does not depend on where they differ. */
export const sameHash = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** A client known by its metadata document's URL, as the token endpoint and the grant see it: public, not stored. */
export const urlClient = (clientId: string, clientName: string): OAuthClientRecord => ({
  clientId,
  clientName,
  redirectUris: [],
  authMethod: 'none',
  secretHash: null,
  createdAt: '',
});

/** The client, authenticated as it registered; `invalid_client` for anything else. */
export async function authenticateClient(
  repo: Pick<OAuthRepo, 'getClient'>,
  form: Record<string, string | undefined>,
  basic: { id: string; secret: string } | null,
): Promise<OAuthClientRecord> {
  const clientId = basic?.id ?? form.client_id;
  // No client_id is longer than a URL one may be: refused as a malformed request, before any lookup.
  if (clientId !== undefined && clientId.length > MAX_URL)
    throw invalidField(basic ? null : 'client_id', `client_id is longer than ${MAX_URL} characters`);
  // A URL client is public: its codes and tokens are bound to the URL, so nothing is fetched here.
  const client =
    clientId && isUrlClientId(clientId)
      ? clientIdUrlProblem(clientId) === null
        ? urlClient(clientId, new URL(clientId).host)
        : undefined
      : clientId && isRegisteredClientId(clientId)
        ? await repo.getClient(clientId)
        : undefined;
  if (!client) throw new AppError('invalid_client', { message: 'Unknown client.' });
  if (form.client_id !== undefined && basic && form.client_id !== basic.id)
    throw new AppError('invalid_client', { message: 'client_id differs from the one in the Authorization header.' });
  const secret =
    client.authMethod === 'client_secret_basic'
      ? basic?.secret
      : client.authMethod === 'client_secret_post'
        ? form.client_secret
        : undefined;
  if (
    client.authMethod !== 'none' &&
    (secret === undefined || !sameHash(secretHash(secret), client.secretHash ?? ''))
  ) {
    throw new AppError('invalid_client', {
      message: `This client authenticates with ${client.authMethod}.`,
      ...(client.authMethod === 'client_secret_basic' ? { headers: { 'www-authenticate': 'Basic realm="svc"' } } : {}),
    });
  }
  return client;
}
