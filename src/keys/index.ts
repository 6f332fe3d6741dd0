export {
  createKeysService,
  keyStands,
  toKeyView,
  type KeysService,
  type KeyView,
  type ResolvedKey,
} from './service.js';
export { expiresInDaysSchema, MAX_KEY_DAYS, mintKeySchema, type MintKeyInput } from './schemas.js';
