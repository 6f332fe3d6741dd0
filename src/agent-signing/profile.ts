import { randomBytes, type KeyObject } from 'node:crypto';
import {
  signRequest,
  verifyRequest,
  type HttpRequestMessage,
  type SignatureHeaderValues,
  type VerifyResult,
} from './httpsig.js';

/**
 * The Web Bot Auth profile of RFC 9421 (draft-meunier-web-bot-auth-architecture) as svc signs
 * and verifies agents' requests.
 *
 * Rules:
 * - Label `sig1`; `tag="web-bot-auth"`; `created` now, `expires` 300 s later (a verifier refuses
 *   a window over 480 s); `keyid` the key's JWK thumbprint; `alg="ed25519"`; a fresh 64-byte
 *   `nonce`.
 * - Covered, in order: `@method`, `@target-uri`, `@authority`, `signature-agent`, then the
 *   header fields the agent named, in its order.
 * - `Signature-Agent` is an RFC 8941 string naming the directory's URL.
 * - The verifier requires the tag, `created`, `expires`, `keyid`, `@authority`, and
 *   `signature-agent` when the request carries that header; a body must be covered by
 *   `content-digest`, and must match it.
 */

export const TAG = 'web-bot-auth';
export const LABEL = 'sig1';
export const LIFETIME_SECONDS = 300;
export const MAX_WINDOW_SECONDS = 480;
export const DIRECTORY_PATH = '/.well-known/http-message-signatures-directory';
export const DIRECTORY_MEDIA_TYPE = 'application/http-message-signatures-directory+json';
export const DIRECTORY_TAG = 'http-message-signatures-directory';
const FIXED = ['@method', '@target-uri', '@authority', 'signature-agent'] as const;

/** The three header values an agent sends. */
export interface AgentSignature {
  'signature-input': string;
  signature: string;
  'signature-agent': string;
}

/** The `Signature-Agent` value naming a directory: an RFC 8941 string. */
export const signatureAgentValue = (directoryUrl: string): string => JSON.stringify(directoryUrl);

/** The request as it will be sent: its URL as a client writes it on the wire (no fragment). */
export function requestTarget(url: URL): string {
  const u = new URL(url.href);
  u.hash = '';
  return u.href;
}

export async function signAgentRequest(
  request: { method: string; url: URL; headers: ReadonlyArray<[string, string]> },
  key: { kid: string; privateKey: KeyObject },
  directoryUrl: string,
  nowSeconds: number,
): Promise<AgentSignature> {
  const agent = signatureAgentValue(directoryUrl);
  const headers: Record<string, string> = { 'signature-agent': agent };
  for (const [name, value] of request.headers) headers[name] = value;
  const message: HttpRequestMessage = { method: request.method, url: requestTarget(request.url), headers };
  const out: SignatureHeaderValues = await signRequest(message, {
    label: LABEL,
    components: [...FIXED, ...request.headers.map(([name]) => name)],
    params: {
      created: nowSeconds,
      expires: nowSeconds + LIFETIME_SECONDS,
      nonce: randomBytes(64).toString('base64'),
      tag: TAG,
      keyid: key.kid,
      alg: true,
    },
    privateKey: key.privateKey,
  });
  return { 'signature-input': out.signatureInput, signature: out.signature, 'signature-agent': agent };
}

/**
 * Verifies a Web Bot Auth signature of a request as a site does (rules above), against the keys
 * of a directory (kid -> public key). `body`: the request's body, when it has one.
 */
export function verifyAgentRequest(
  message: HttpRequestMessage,
  keys: ReadonlyMap<string, KeyObject>,
  nowSeconds: number,
  body?: Uint8Array,
): Promise<VerifyResult> {
  const hasAgent = Object.keys(message.headers).some((k) => k.toLowerCase() === 'signature-agent');
  const hasBody = body !== undefined && body.length > 0;
  return verifyRequest(message, {
    keyFor: (kid) => keys.get(kid),
    now: nowSeconds,
    select: (input) => input.params.tag === TAG,
    requiredComponents: [
      '@authority',
      ...(hasAgent ? ['signature-agent'] : []),
      ...(hasBody ? ['content-digest'] : []),
    ],
    requiredParams: ['created', 'expires', 'keyid', 'tag'],
    maxWindowSeconds: MAX_WINDOW_SECONDS,
    skewSeconds: 60,
    ...(body !== undefined ? { body } : {}),
  }).then((result) =>
    result.ok && result.params.tag !== TAG
      ? { ok: false, reason: 'wrong_tag', message: `the signature's tag is not ${TAG}` }
      : result,
  );
}
