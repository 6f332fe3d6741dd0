export {
  createServiceTokensService,
  addressAllowed,
  parseCidr,
  serviceTokenScopes,
  type ServiceTokensService,
  type CreateTokenInput,
  type ServiceTokenView,
} from './service.js';
