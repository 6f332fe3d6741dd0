import type { SignatureV4 } from '@smithy/signature-v4';
import type { GatewayProvider } from '../../settings/schema.js';

/**
 * AWS Signature Version 4 for Bedrock runtime requests, by AWS's own signer (`@smithy/signature-v4`
 * with `@aws-crypto/sha256-js`, as the AWS SDK signs), never by hand. Service `bedrock`, the
 * provider's region, the credentials the settings read from the standard AWS environment
 * variables, and the gateway's clock as the signing time. One signer per provider (it caches its
 * signing keys by day). The signer's packages are imported with the first Bedrock request, not when
 * the server starts.
 */
const signers = new WeakMap<GatewayProvider, SignatureV4>();

export class MissingCredentials extends Error {
  readonly code = 'aws_credentials_missing';
}

async function signerOf(provider: GatewayProvider): Promise<SignatureV4> {
  let signer = signers.get(provider);
  if (!signer) {
    if (!provider.aws) throw new MissingCredentials('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set');
    const [{ Sha256 }, { SignatureV4 }] = await Promise.all([
      import('@aws-crypto/sha256-js'),
      import('@smithy/signature-v4'),
    ]);
    signer = new SignatureV4({
      service: 'bedrock',
      region: provider.region ?? '',
      credentials: provider.aws,
      sha256: Sha256,
    });
    signers.set(provider, signer);
  }
  return signer;
}

/**
 * The signed headers (authorization, x-amz-date, x-amz-content-sha256, x-amz-security-token when
 * a session token is set) for a JSON POST of `body` to the provider's base URL + `path`.
 */
export async function signedHeaders(
  provider: GatewayProvider,
  path: string,
  headers: Record<string, string>,
  body: string,
  at: Date,
): Promise<Record<string, string>> {
  const base = new URL(provider.baseUrl);
  const signed = await (
    await signerOf(provider)
  ).sign(
    {
      method: 'POST',
      protocol: base.protocol,
      hostname: base.hostname,
      ...(base.port ? { port: Number(base.port) } : {}),
      path: `${base.pathname.replace(/\/+$/, '')}${path}`,
      query: {},
      headers: { ...headers, host: base.host, 'content-type': 'application/json' },
      body,
    },
    { signingDate: at },
  );
  // undici sends the host it connects to, the one signed; the rest go as signed.
  const { host: _host, ...rest } = signed.headers as Record<string, string>;
  return rest;
}
