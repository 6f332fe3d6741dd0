export { createServiceTokensService, addressAllowed, parseCidr, serviceTokenScopes, type ServiceTokensService, type CreateTokenInput } from './service.js';
