import ipaddr from 'ipaddr.js';
import { addressProblem } from '../../lib/safe-target.js';
import { PRIVATE_SETTING } from './types.js';

/**
 * An upstream address the proxy may call: https, or http on the loopback interface only (a
 * secret never crosses a network in clear); no credentials in the address itself (they would be
 * stored, recorded and shown in clear; the secret field is sealed).
 */
export function urlProblem(raw: string, allowPrivate: boolean): string | null {
  const url = new URL(raw);
  if (url.username || url.password) return 'put credentials in the secret field, not in the URL';
  if (url.search !== '') return 'the URL may not carry a query (credentials belong in the secret field)';
  const loopback = url.hostname === '127.0.0.1' || url.hostname === '[::1]' || url.hostname === 'localhost';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    return 'the URL must be https (http only on the loopback interface)';
  // A written address is judged now; a name when it is connected to (its addresses may change).
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = host === 'localhost' ? '127.0.0.1' : ipaddr.isValid(host) ? host : null;
  return literal ? addressProblem(literal, allowPrivate, PRIVATE_SETTING) : null;
}
