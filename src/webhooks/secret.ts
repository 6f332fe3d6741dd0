import { sealText, unsealText } from '../lib/seal.js';

/** An endpoint's signing secret (`whs_…`), sealed with the master key and bound to its workspace and endpoint. */
const SEAL_PURPOSE = 'webhook-secret';

export const sealEndpointSecret = (masterKey: Buffer, wid: string, endpointId: string, secret: string): string =>
  sealText(masterKey, SEAL_PURPOSE, `${wid}/${endpointId}`, secret);

export const unsealEndpointSecret = (masterKey: Buffer, wid: string, endpointId: string, sealed: string): string =>
  unsealText(masterKey, SEAL_PURPOSE, `${wid}/${endpointId}`, sealed);
