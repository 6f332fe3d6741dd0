import { randomBytes } from 'node:crypto';
import { randomBase62 } from './random-pool.js';

/**
 * Identifiers and secret values: one shape for every kind, told apart by its prefix.
 * - Ids: a prefix plus 22 random base62 characters (about 131 bits).
 * - Secrets: a prefix plus 43 base64url characters (256 bits), shown once, stored as hashes.
 */

export type IdPrefix =
  | 'ws'
  | 'usr'
  | 'agt'
  | 'act'
  | 'apr'
  | 'mnd'
  | 'tpl'
  | 'bp'
  | 'key'
  | 'tok'
  | 'evr'
  | 'evt'
  | 'whk'
  | 'dlv'
  | 'bud'
  | 'rsv'
  | 'call'
  | 'task'
  | 'cnx'
  | 'req'
  | 'scr'
  | 'lgn'
  | 'ap2';
/** `dvc`, `pat`, `prt`: a device code, and a person's CLI access and refresh tokens (oauth/device/service.ts). */
export type SecretPrefix = 'ask' | 'ims' | 'aat' | 'art' | 'mcp' | 'mcs' | 'sid' | 'whs' | 'dvc' | 'pat' | 'prt';

export interface IdSource {
  id(prefix: IdPrefix): string;
  secret(prefix: SecretPrefix): string;
}

export const randomIds: IdSource = {
  id(prefix) {
    return `${prefix}_${randomBase62(22)}`;
  },
  secret(prefix) {
    return `${prefix}_${randomBytes(32).toString('base64url')}`;
  },
};

export function hasPrefix(value: string, prefix: SecretPrefix | IdPrefix): boolean {
  return value.startsWith(`${prefix}_`);
}

/** Whether `value` is an id of that prefix as `randomIds` makes them (text from outside, checked before a lookup). */
export function isId(value: string, prefix: IdPrefix): boolean {
  return (
    value.length === prefix.length + 23 &&
    hasPrefix(value, prefix) &&
    /^[0-9A-Za-z]{22}$/.test(value.slice(prefix.length + 1))
  );
}
