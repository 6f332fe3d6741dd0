import type { Request, Server } from '@hapi/hapi';
import { AppError } from '../../errors/app-error.js';
import type { Clock } from '../../lib/clock.js';
import { parseSignatureHeader, signatureMatches, timestampFresh, type ParsedSignature } from '../../lib/svc-signature.js';
import { SIGNATURE, credentials, expectedCredential } from './callers.js';

/**
 * Signed inbound requests (SPEC.md 5.4), generic `svc-signature` scheme. The header and its
 * timestamp are checked before the body is read; the HMAC over the raw bytes is checked before
 * anything parses them (routes set `payload: { parse: false, output: 'data' }` and
 * `auth: { strategy: 'signature', payload: 'required' }`).
 * The route names whose secrets apply through `secretsFor(request)`: several during a rotation.
 */
export interface SignatureOptions {
  clock: Clock;
  secretsFor(request: Request): readonly string[] | Promise<readonly string[]>;
}

export function registerSignature(server: Server, options: SignatureOptions): void {
  server.auth.scheme(SIGNATURE, () => ({
    options: { payload: true },
    authenticate(request, h) {
      const header = request.headers['svc-signature'];
      if (typeof header !== 'string') {
        throw new AppError('unauthenticated', { message: `This route takes ${expectedCredential[SIGNATURE]}; none was sent.` });
      }
      const parsed = parseSignatureHeader(header);
      if (!parsed) throw new AppError('unauthenticated', { message: 'The svc-signature header is malformed; expected t=<unix seconds>,v1=<hex>.' });
      if (!timestampFresh(parsed.t, options.clock.now())) {
        throw new AppError('unauthenticated', { message: 'The signature timestamp is more than five minutes from now.', fix: "Sign each request at the moment it is sent, with the sender's clock in sync." });
      }
      return h.authenticated({ credentials: credentials({ kind: 'signature', keyId: 'svc-signature' }), artifacts: { parsed } });
    },
    async payload(request, h) {
      const parsed = request.auth.artifacts.parsed as ParsedSignature;
      const raw = Buffer.isBuffer(request.payload) ? request.payload : Buffer.alloc(0);
      const secrets = await options.secretsFor(request);
      if (!signatureMatches(parsed, raw, secrets)) {
        throw new AppError('unauthenticated', { message: 'The signature does not match the body.', fix: 'Sign the exact bytes sent, with the current secret.' });
      }
      return h.continue;
    },
  }));
  server.auth.strategy(SIGNATURE, SIGNATURE);
}

export { SIGNATURE };
