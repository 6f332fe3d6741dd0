import ipaddr from 'ipaddr.js';

/**
 * Address ranges, as service tokens pin them (`ipAllow`) and the server names its trusted proxies:
 * CIDR, IPv4 or IPv6, a bare address being a /32 or /128. An IPv4-mapped IPv6 address matches
 * IPv4 ranges; the families never match each other otherwise.
 */
export function parseCidr(range: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  return range.includes('/')
    ? ipaddr.parseCIDR(range)
    : (() => {
        const addr = ipaddr.parse(range);
        return [addr, addr.kind() === 'ipv4' ? 32 : 128] as [ipaddr.IPv4 | ipaddr.IPv6, number];
      })();
}

export function addressAllowed(address: string, ranges: readonly string[]): boolean {
  if (ranges.length === 0) return true;
  // Only canonical spellings: no legacy IPv4 forms such as 0x7f.1 or 2130706433.
  if (!address.includes(':') && !ipaddr.IPv4.isValidFourPartDecimal(address)) return false;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(address);
  } catch {
    return false;
  }
  return ranges.some((range) => {
    const [net, bits] = parseCidr(range);
    return addr.kind() === net.kind() && addr.match([net, bits] as never);
  });
}
