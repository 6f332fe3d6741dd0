export { addressAllowed, parseCidr } from '../lib/ip-ranges.js';
export {
  createServiceTokensService,
  serviceTokenScopes,
  type ServiceTokensService,
  type CreateTokenInput,
  type ServiceTokenView,
} from './service.js';
export { createTokenSchema } from './schemas.js';
