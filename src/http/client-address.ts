import ipaddr from 'ipaddr.js';
import type { Request } from '@hapi/hapi';
import { addressAllowed } from '../lib/ip-ranges.js';

/**
 * The client's address: the socket's, unless the socket belongs to a configured trusted proxy,
 * in which case the right-most x-forwarded-for entry that is not itself a trusted proxy.
 * With no trusted proxies configured, x-forwarded-for is never believed.
 */
export function clientAddress(request: Request, trustedProxies: readonly string[]): string {
  return clientAddressOf(request.info.remoteAddress, request.headers['x-forwarded-for'], trustedProxies);
}

/** clientAddress from the socket's address and the x-forwarded-for header (a raw request's). */
export function clientAddressOf(
  remoteAddress: string | undefined,
  header: unknown,
  trustedProxies: readonly string[],
): string {
  const socket = normalise(remoteAddress ?? '');
  if (trustedProxies.length === 0 || !addressAllowed(socket, trustedProxies)) return socket;
  const joined: string = Array.isArray(header) ? header.join(',') : typeof header === 'string' ? header : '';
  const hops = joined
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i -= 1) {
    const hop = normalise(hops[i]!);
    if (!ipaddr.isValid(hop)) return socket;
    if (!addressAllowed(hop, trustedProxies)) return hop;
  }
  return socket;
}

function normalise(address: string): string {
  try {
    return ipaddr.process(address).toString();
  } catch {
    return address;
  }
}

/**
 * The key a per-address limit counts under: the address for IPv4, its /64 network for IPv6 (one
 * subscriber usually holds a whole /64, and would otherwise get 2^64 budgets).
 */
export function rateKeyOf(address: string): string {
  try {
    const parsed = ipaddr.process(address);
    if (parsed.kind() === 'ipv6')
      return `${(parsed as ipaddr.IPv6).parts
        .slice(0, 4)
        .map((p) => p.toString(16))
        .join(':')}::/64`;
    return parsed.toString();
  } catch {
    return address;
  }
}
