import type { KeyObject } from 'node:crypto';
import { httpbis, createSigner, createVerifier } from 'http-message-signatures';
import { parseDictionary, serializeDictionary } from 'structured-headers';
import { digestMatches, parseSignatureInput, signatureBytes, type ParsedSignatureInput } from './parse.js';

/**
 * RFC 9421 HTTP Message Signatures for requests, Ed25519 only, over the `http-message-signatures`
 * package (the signature base, the serialisation) and `structured-headers` (RFC 8941 parsing).
 * Profile-free: what a Web Bot Auth signature must carry is profile.ts.
 *
 * Rules enforced by the verifier:
 * - One signature is judged, the one its label names (or the only one present); any parse failure
 *   of Signature-Input or Signature is `malformed`, never a throw.
 * - The algorithm is Ed25519 and nothing else: an `alg` parameter other than `ed25519` is refused
 *   before any key is used, and the key found for `keyid` verifies only as Ed25519.
 * - Components and parameters the caller requires must be covered (`missing_component`,
 *   `missing_parameter`); `created` may not be in the future, `expires` not in the past, against
 *   the injected clock, and the window between them may be bounded.
 * - When `content-digest` is covered and the body is given, the body's SHA-256 or SHA-512 must be
 *   the one the header names (RFC 9530), or the signature covers another body (`digest_mismatch`).
 */

/** A request as signed and verified: its method, its full URL, its header fields by name. */
export interface HttpRequestMessage {
  method: string;
  url: string;
  headers: Record<string, string>;
}

export interface SignParams {
  created: number;
  expires?: number;
  nonce?: string;
  tag?: string;
  keyid: string;
  /** Whether to name `alg="ed25519"` in the signature parameters. */
  alg?: boolean;
}

/** The two header values a signature adds: `Signature-Input` and `Signature`, as `label=...` members. */
export interface SignatureHeaderValues {
  signatureInput: string;
  signature: string;
}

/**
 * Signs a request with an Ed25519 key: `components` in the given order (derived components such
 * as `@authority`, or lower-case field names), the parameters in the order created, expires,
 * nonce, tag, keyid, alg (those given).
 */
export async function signRequest(
  message: HttpRequestMessage,
  options: { label: string; components: readonly string[]; params: SignParams; privateKey: KeyObject },
): Promise<SignatureHeaderValues> {
  const { params } = options;
  const names = (['created', 'expires', 'nonce', 'tag', 'keyid', 'alg'] as const).filter((n) =>
    n === 'alg' ? params.alg === true : params[n] !== undefined,
  );
  const signed = await httpbis.signMessage(
    {
      key: createSigner(options.privateKey, 'ed25519', params.keyid),
      name: options.label,
      fields: [...options.components],
      params: [...names],
      paramValues: {
        created: new Date(params.created * 1000),
        ...(params.expires !== undefined ? { expires: new Date(params.expires * 1000) } : {}),
        ...(params.nonce !== undefined ? { nonce: params.nonce } : {}),
        ...(params.tag !== undefined ? { tag: params.tag } : {}),
      },
    },
    { method: message.method, url: message.url, headers: { ...message.headers } },
  );
  const headers = signed.headers as Record<string, string>;
  return { signatureInput: headers['Signature-Input']!, signature: headers['Signature']! };
}

/**
 * Signs a response bound to its request (components such as `@authority;req`), as a directory's
 * answer is signed; several keys add several members, each under its own label.
 */
export async function signResponse(
  response: { status: number; headers: Record<string, string> },
  request: HttpRequestMessage,
  signers: ReadonlyArray<{ label: string; params: SignParams; privateKey: KeyObject }>,
  components: readonly string[],
): Promise<SignatureHeaderValues> {
  let headers: Record<string, string | string[]> = { ...response.headers };
  for (const s of signers) {
    const names = (['created', 'expires', 'nonce', 'tag', 'keyid'] as const).filter((n) => s.params[n] !== undefined);
    const signed = await httpbis.signMessage(
      {
        key: createSigner(s.privateKey, 'ed25519', s.params.keyid),
        name: s.label,
        fields: [...components],
        params: [...names],
        paramValues: {
          created: new Date(s.params.created * 1000),
          ...(s.params.expires !== undefined ? { expires: new Date(s.params.expires * 1000) } : {}),
          ...(s.params.tag !== undefined ? { tag: s.params.tag } : {}),
        },
      },
      { status: response.status, headers },
      { method: request.method, url: request.url, headers: { ...request.headers } },
    );
    headers = signed.headers;
  }
  return { signatureInput: String(headers['Signature-Input'] ?? ''), signature: String(headers['Signature'] ?? '') };
}

/** Why a signature was not accepted. */
export type VerifyFailure =
  | 'no_signature'
  | 'malformed'
  | 'unknown_key'
  | 'algorithm_not_allowed'
  | 'missing_component'
  | 'missing_parameter'
  | 'wrong_tag'
  | 'not_yet_valid'
  | 'expired'
  | 'window_too_long'
  | 'digest_mismatch'
  | 'bad_signature';

export type VerifyResult =
  | { ok: true; label: string; keyid: string; components: string[]; params: Record<string, string | number> }
  | { ok: false; reason: VerifyFailure; message: string };

const fail = (reason: VerifyFailure, message: string): VerifyResult => ({ ok: false, reason, message });

function headerOf(headers: Record<string, string>, name: string): string | undefined {
  const found = Object.keys(headers).find((k) => k.toLowerCase() === name);
  return found === undefined ? undefined : headers[found];
}

export interface VerifyOptions {
  /** The public key of a keyid, or undefined when it is not known. */
  keyFor(keyid: string): KeyObject | undefined;
  /** Seconds since the epoch, from the injected clock. */
  now: number;
  /** Which signature to judge: the first whose input satisfies this, else the only one. */
  select?: (input: ParsedSignatureInput) => boolean;
  requiredComponents?: readonly string[];
  requiredParams?: readonly string[];
  /** The longest allowed `expires - created`, in seconds. */
  maxWindowSeconds?: number;
  /** Clock skew allowed on `created`, in seconds (default 0). */
  skewSeconds?: number;
  /** The request's body, when the verifier has it: checked against a covered `content-digest`. */
  body?: Uint8Array;
}

function checkInput(input: ParsedSignatureInput, options: VerifyOptions): VerifyResult | null {
  const { params } = input;
  const covered = new Set(input.components);
  for (const c of options.requiredComponents ?? []) {
    if (!covered.has(JSON.stringify(c))) return fail('missing_component', `the signature does not cover "${c}"`);
  }
  for (const p of options.requiredParams ?? []) {
    if (!(p in params)) return fail('missing_parameter', `the signature has no ${p} parameter`);
  }
  if ('alg' in params && params.alg !== 'ed25519')
    return fail('algorithm_not_allowed', `alg ${String(params.alg)} is not accepted: only ed25519`);
  if (typeof params.keyid !== 'string') return fail('missing_parameter', 'the signature has no keyid');
  const created = params.created;
  const expires = params.expires;
  if (created !== undefined && (typeof created !== 'number' || !Number.isInteger(created)))
    return fail('malformed', 'created must be an integer');
  if (expires !== undefined && (typeof expires !== 'number' || !Number.isInteger(expires)))
    return fail('malformed', 'expires must be an integer');
  if (typeof created === 'number' && created > options.now + (options.skewSeconds ?? 0))
    return fail('not_yet_valid', 'the signature was created in the future');
  if (typeof expires === 'number' && expires < options.now) return fail('expired', 'the signature has expired');
  if (
    options.maxWindowSeconds !== undefined &&
    typeof created === 'number' &&
    typeof expires === 'number' &&
    (expires < created || expires - created > options.maxWindowSeconds)
  )
    return fail('window_too_long', `expires must be at most ${options.maxWindowSeconds} s after created`);
  return null;
}

/** Verifies one RFC 9421 signature of a request (rules above). Never throws for what a request carries. */
export async function verifyRequest(message: HttpRequestMessage, options: VerifyOptions): Promise<VerifyResult> {
  const inputValue = headerOf(message.headers, 'signature-input');
  const sigValue = headerOf(message.headers, 'signature');
  if (inputValue === undefined || sigValue === undefined)
    return fail('no_signature', 'the request carries no Signature-Input and Signature');
  const inputs = parseSignatureInput(inputValue);
  if (!inputs) return fail('malformed', 'Signature-Input is not a dictionary of signature inputs');
  const input =
    (options.select ? inputs.find(options.select) : undefined) ?? (inputs.length === 1 ? inputs[0] : undefined);
  if (!input) return fail('no_signature', 'no signature of the expected kind');
  const bytes = signatureBytes(sigValue, input.label);
  if (!bytes) return fail('malformed', `Signature has no byte sequence for ${input.label}`);
  const refused = checkInput(input, options);
  if (refused) return refused;
  const keyid = input.params.keyid as string;
  const publicKey = options.keyFor(keyid);
  if (!publicKey || publicKey.asymmetricKeyType !== 'ed25519') return fail('unknown_key', `no key ${keyid}`);
  if (input.components.includes('"content-digest"') && options.body !== undefined) {
    const digest = headerOf(message.headers, 'content-digest');
    if (digest === undefined || !digestMatches(digest, options.body))
      return fail('digest_mismatch', 'the body is not the one Content-Digest names');
  }
  // The one judged signature alone, so that the library checks exactly it.
  const inputMember = parseDictionary(inputValue).get(input.label)!;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(message.headers)) {
    if (k.toLowerCase() !== 'signature' && k.toLowerCase() !== 'signature-input') headers[k.toLowerCase()] = v;
  }
  headers['signature-input'] = serializeDictionary(new Map([[input.label, inputMember]]));
  headers['signature'] = serializeDictionary(
    new Map([[input.label, [new Uint8Array(bytes).buffer as ArrayBuffer, new Map()]]]),
  );
  try {
    const ok = await httpbis.verifyMessage(
      {
        keyLookup: async (p) =>
          p.keyid === keyid ? { id: keyid, algs: ['ed25519'], verify: createVerifier(publicKey, 'ed25519') } : null,
        // The clock checks are made above, against the injected clock.
        tolerance: Number.MAX_SAFE_INTEGER / 2,
      },
      { method: message.method, url: message.url, headers },
    );
    if (ok !== true) return fail('bad_signature', 'the signature does not verify');
  } catch (err) {
    return fail('bad_signature', `the signature does not verify: ${(err as Error).message}`);
  }
  return {
    ok: true,
    label: input.label,
    keyid,
    components: input.components,
    params: Object.fromEntries(
      Object.entries(input.params).filter((e): e is [string, string | number] => typeof e[1] !== 'boolean'),
    ),
  };
}
