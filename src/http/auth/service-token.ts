import type { Server } from '@hapi/hapi';
import { AppError } from '../../errors/app-error.js';
import type { TableValue } from '../../store/index.js';
import { clientAddress } from '../client-address.js';
import { svcOptions } from '../route-options.js';
import { SERVICE_TOKEN, credentials, expectedCredential, type PersonCredential } from './callers.js';
import { bearer } from './bearer.js';

// The record shapes this piece handles, as the store's registry declares them (the domains own
// them in their records.ts, a layer above this one).
type ServiceTokenRecord = TableValue<'serviceTokens'>;
type ServiceTokenScope = ServiceTokenRecord['scopes'][number];

/**
 * Service token (docs/security.md#security-model): Authorization: Bearer ims_…. Unknown, revoked or from an address
 * outside ipAllow: 401 invalid_token; expired: 401 token_expired; the route's scope
 * (`plugins.svc.tokenScope`) missing: 403 missing_scope.
 */
/** What the strategy asks of the service tokens service: the live token, else an AppError (invalid_token, …). */
export interface TokenVerifier {
  verify(value: string, clientAddress: string): Promise<ServiceTokenRecord>;
}

/**
 * What the strategy asks of the service that knows a person's command-line token (`pat_`, from
 * `svc login`): the person, once their role allows the route's scope, else an AppError
 * (invalid_token, token_expired, forbidden).
 */
export interface PersonVerifier {
  resolve(value: string, scope: ServiceTokenScope | undefined): Promise<PersonCredential>;
}

export function registerServiceToken(
  server: Server,
  deps: { tokens: TokenVerifier; trustedProxies: readonly string[]; persons?: PersonVerifier },
): void {
  server.auth.scheme(SERVICE_TOKEN, () => ({
    async authenticate(request, h) {
      const value = bearer(request);
      if (value?.startsWith('pat_') && deps.persons) {
        const needed = svcOptions(request.route.settings).tokenScope as ServiceTokenScope | undefined;
        const person = await deps.persons.resolve(value, needed);
        return h.authenticated({ credentials: credentials({ kind: 'person', ...person }) });
      }
      if (!value || !value.startsWith('ims_')) {
        throw new AppError('unauthenticated', {
          message: `This route takes ${expectedCredential[SERVICE_TOKEN]}; none was sent.`,
        });
      }
      const token = await deps.tokens.verify(value, clientAddress(request, deps.trustedProxies));
      const needed = svcOptions(request.route.settings).tokenScope as ServiceTokenScope | undefined;
      if (needed && !token.scopes.includes(needed)) {
        throw new AppError('missing_scope', { message: `This route needs a service token with scope ${needed}.` });
      }
      return h.authenticated({
        credentials: credentials({ kind: 'service-token', workspaceId: token.workspaceId, token }),
      });
    },
  }));
  server.auth.strategy(SERVICE_TOKEN, SERVICE_TOKEN);
}
