import { sealText, unsealText } from '../lib/seal.js';
import type { IntegrationKind, IntegrationRecord } from './records.js';

/**
 * How an integration's secrets are sealed (registry.ts says the rules): each with the master key,
 * bound to its workspace and kind (a signing secret) or to its workspace, kind and setting name
 * (a secret setting such as github's `token`), so a sealed value copied to another record does not open.
 */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;
const SEAL_PURPOSE = 'integration-secret';
const bound = (wid: string, kind: string) => `${wid}/${kind}`;

/** Whether a stored signing secret still verifies at `now` (the current one, or one within its overlap). */
export const isLive = (s: IntegrationRecord['secrets'][number], now: number): boolean =>
  s.retiresAt === null || Date.parse(s.retiresAt) > now;

export const sealSecret = (masterKey: Buffer, wid: string, kind: IntegrationKind, secret: string): string =>
  sealText(masterKey, SEAL_PURPOSE, bound(wid, kind), secret);

export const unsealSecret = (masterKey: Buffer, wid: string, kind: IntegrationKind, sealed: string): string =>
  unsealText(masterKey, SEAL_PURPOSE, bound(wid, kind), sealed);

export const sealSetting = (masterKey: Buffer, wid: string, kind: IntegrationKind, name: string, value: string) =>
  sealText(masterKey, SEAL_PURPOSE, `${bound(wid, kind)}/config/${name}`, value);

export const unsealSetting = (masterKey: Buffer, wid: string, kind: IntegrationKind, name: string, sealed: string) =>
  unsealText(masterKey, SEAL_PURPOSE, `${bound(wid, kind)}/config/${name}`, sealed);
