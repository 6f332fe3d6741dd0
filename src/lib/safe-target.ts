import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';

/**
 * Where the service may send a request it makes for a workspace (outbound webhooks, identity
 * provider key sets, GitHub deployment callbacks, upstream MCP servers): the one rule, and the undici dispatcher that
 * enforces it at connect time.
 * Rules:
 * - An address is acceptable when ipaddr.js calls its range `unicast` (public); `loopback`,
 *   `private` and `uniqueLocal` only when the operator allows private targets
 *   (`webhooks.allowPrivateTargets`); link-local (cloud metadata) and every other range never.
 * - The dispatcher vets every address its own DNS lookup returns, and connects to the address it
 *   vetted (the lookup is the connection's lookup), so a name that resolved to a public address
 *   when checked and to a private one at connect (DNS rebinding) is refused. A name is refused
 *   when any of its addresses is. An address written in the URL is vetted before connecting, and
 *   the connected peer is vetted once more before a byte is sent.
 * - `targetProblem` is the same rule for a clear 400 when a target is configured (http or https,
 *   https only when asked, no credentials in the URL, a name that resolves).
 */
export type LookupFn = (
  hostname: string,
  options: LookupOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
) => void;

export class TargetRefused extends Error {
  readonly code = 'SVC_TARGET_REFUSED';
}

/** Why an address may not be connected to, or null when it may; `setting` is what allows private ones. */
export function addressProblem(
  address: string,
  allowPrivate: boolean,
  setting = 'webhooks.allowPrivateTargets',
): string | null {
  let range: string;
  try {
    range = ipaddr.process(address).range();
  } catch {
    return 'it resolves to an address that cannot be read';
  }
  if (range === 'unicast') return null;
  if (range === 'linkLocal') return 'it resolves to a link-local address';
  if (['loopback', 'private', 'uniqueLocal'].includes(range)) {
    return allowPrivate ? null : `it resolves to a ${range} address (allowed only with ${setting})`;
  }
  return `it resolves to a ${range} address`;
}

const LOOKUP_DEADLINE_MS = 5_000;

const bare = (hostname: string) => hostname.replace(/^\[|\]$/g, '');

/** The configure-time check: null when `raw` is a target requests may be sent to. */
export async function targetProblem(
  raw: string,
  options: { allowPrivateTargets: boolean; httpsOnly?: boolean; lookup?: LookupFn },
): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'it is not a URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'the address must be http or https';
  if (url.protocol === 'http:' && options.httpsOnly && !options.allowPrivateTargets) return 'the address must be https';
  if (url.username || url.password) return 'the address may not carry credentials';
  const host = bare(url.hostname);
  const look = options.lookup ?? (dnsLookup as unknown as LookupFn);
  const addresses = ipaddr.isValid(host)
    ? [host]
    : await new Promise<string[] | null>((resolve) => {
        // A name server that never answers must not hold a delivery (or shutdown) for long.
        const late = setTimeout(() => resolve(null), LOOKUP_DEADLINE_MS);
        look(host, { all: true }, (err, found) => {
          clearTimeout(late);
          resolve(err ? [] : (found as LookupAddress[]).map((a) => a.address));
        });
      });
  if (addresses === null) return 'its host name did not resolve in time';
  if (addresses.length === 0) return 'its host name does not resolve';
  for (const address of addresses) {
    const problem = addressProblem(address, options.allowPrivateTargets);
    if (problem) return problem;
  }
  return null;
}

/**
 * An undici dispatcher that connects only to acceptable addresses (pass it as `dispatcher` on
 * every request to a workspace-chosen target). `lookup` replaces DNS (tests).
 */
export function safeDispatcher(options: {
  allowPrivateTargets: boolean;
  /** The setting a refusal names as the one that allows private addresses. */
  setting?: string;
  lookup?: LookupFn;
  connectTimeoutMs?: number;
  /** Certificates to trust instead of the system's (tests serving https on loopback). */
  ca?: string;
}): Agent {
  const { allowPrivateTargets, setting } = options;
  const look = options.lookup ?? (dnsLookup as unknown as LookupFn);

  const vetted: LookupFn = (hostname, lookupOptions, callback) => {
    look(hostname, { ...lookupOptions, all: true }, (err, found) => {
      if (err) return callback(err, '');
      const list = found as LookupAddress[];
      if (list.length === 0)
        return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), '');
      for (const a of list) {
        const problem = addressProblem(a.address, allowPrivateTargets, setting);
        if (problem) return callback(new TargetRefused(`refused: ${problem}`), '');
      }
      // The connection uses exactly the addresses vetted here.
      if (lookupOptions.all) return callback(null, list);
      return callback(null, list[0]!.address, list[0]!.family);
    });
  };

  const base = buildConnector({
    lookup: vetted as never,
    timeout: options.connectTimeoutMs ?? 5_000,
    ...(options.ca ? { ca: options.ca } : {}),
  });
  const connect: buildConnector.connector = (opts, callback) => {
    const host = bare(opts.hostname);
    if (ipaddr.isValid(host)) {
      const problem = addressProblem(host, allowPrivateTargets, setting);
      if (problem) return callback(new TargetRefused(`refused: ${problem}`), null);
    }
    base(opts, (err, socket) => {
      if (err || !socket) return callback(err ?? new Error('could not connect'), null);
      // Whatever path led here, the peer itself must be acceptable.
      const problem = socket.remoteAddress
        ? addressProblem(socket.remoteAddress, allowPrivateTargets, setting)
        : 'the peer has no address';
      if (problem) {
        socket.destroy();
        return callback(new TargetRefused(`refused: ${problem}`), null);
      }
      return callback(null, socket);
    });
  };
  return new Agent({ connect });
}

/** Whether an undici failure was this rule refusing the target (its message says why). */
export function refusedBy(err: unknown): TargetRefused | undefined {
  for (
    let e = err as { cause?: unknown } | undefined, i = 0;
    e && i < 5;
    e = e.cause as { cause?: unknown } | undefined, i += 1
  ) {
    if (e instanceof TargetRefused) return e;
  }
  return undefined;
}
