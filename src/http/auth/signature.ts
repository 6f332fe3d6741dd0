import type { Request, Server } from '@hapi/hapi';
import { AppError } from '../../errors/app-error.js';
import type { Clock } from '../../lib/clock.js';
import type { TableValue } from '../../store/index.js';
import { SIGNATURE, credentials } from './callers.js';

// The record shapes this piece handles, as the store's registry declares them (the domains own
// them in their records.ts, a layer above this one).
type IntegrationKind = TableValue<'integrations'>['kind'];

/**
 * Signed inbound requests (docs/integrations.md): one strategy per integration kind, all of the caller
 * kind `signature`. Each runs its verifier in two steps:
 * 1. `headers`, before the body is read: the signature header is there, well-formed and fresh.
 * 2. `body`, over the raw bytes before anything parses them (routes set
 *    `payload: { parse: false, output: 'data' }` and `auth: { strategy, payload: 'required' }`):
 *    the signature verifies in constant time against every secret in force, and single-use
 *    identifiers are claimed. What it returns (the workspace, verified claims) is what the
 *    handler reads, through `verified(request)`.
 * A failure in either step is `401 unauthenticated`, and the handler never runs.
 */
export interface InboundVerifier<A = unknown> {
  kind: IntegrationKind;
  /**
   * A second strategy of the same kind, for a route whose secrets are not the workspace's (the
   * operator's Stripe billing endpoint, `stripe:billing`). Refusals are still counted under `kind`.
   */
  variant?: string;
  headers(request: Request, nowMs: number): A | Promise<A>;
  body(request: Request, raw: Buffer, artifacts: A): unknown;
}

export const inboundStrategy = (kind: IntegrationKind, variant?: string): string =>
  `${SIGNATURE}:${kind}${variant === undefined ? '' : `:${variant}`}`;

/** The 401 every verifier throws, with what was wrong in plain words and how to send it right. */
export function signatureRefused(
  message: string,
  fix = 'Sign the exact bytes sent, with the current secret, at the moment of sending.',
): AppError {
  return new AppError('unauthenticated', { message, fix });
}

export function registerInbound(server: Server, clock: Clock, verifiers: readonly InboundVerifier[]): void {
  server.auth.scheme(SIGNATURE, (_server, options) => {
    const verifier = (options as { verifier: InboundVerifier }).verifier;
    return {
      options: { payload: true },
      async authenticate(request, h) {
        const artifacts = await verifier.headers(request, clock.now());
        return h.authenticated({
          credentials: credentials({ kind: 'signature', keyId: verifier.kind }),
          artifacts: { header: artifacts },
        });
      },
      async payload(request, h) {
        const raw = Buffer.isBuffer(request.payload) ? request.payload : Buffer.alloc(0);
        const artifacts = request.auth.artifacts as { header: unknown; verified?: unknown };
        artifacts.verified = await verifier.body(request, raw, artifacts.header);
        return h.continue;
      },
    };
  });
  for (const verifier of verifiers)
    server.auth.strategy(inboundStrategy(verifier.kind, verifier.variant), SIGNATURE, { verifier });
}

/** What the route's verifier established about this request. */
export function verified<T>(request: Request): T {
  return (request.auth.artifacts as { verified: T }).verified;
}

export { SIGNATURE };
