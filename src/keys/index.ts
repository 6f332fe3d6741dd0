export { createKeysService, toKeyView, type KeysService, type KeyView, type ResolvedKey } from './service.js';
export { mintKeySchema, type MintKeyInput } from './schemas.js';
