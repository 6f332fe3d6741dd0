import Joi from 'joi';

/**
 * The AP2 routes' bodies (docs/ap2.md), every field's error listed.
 * - A public key (JWK): EC P-256 (`kty`, `crv`, `x`, `y`, base64url); a private member (`d`) is refused.
 * - Trusted issuers: 1 to 20, each a name and keys (`jwks`, matched by `kid`) or certificate roots
 *   (`x5cRoots`, PEM), or both; `iss` optional.
 * - A credential: a compact SD-JWT of at most 64 KiB.
 */
const B64URL = /^[A-Za-z0-9_-]+$/;

/** The longest credential text read. */
export const MAX_CREDENTIAL_CHARS = 65_536;

export const publicJwkSchema = Joi.object({
  kty: Joi.string().valid('EC').required(),
  crv: Joi.string().valid('P-256').required(),
  x: Joi.string().pattern(B64URL).length(43).required(),
  y: Joi.string().pattern(B64URL).length(43).required(),
  kid: Joi.string().max(200),
  alg: Joi.string().valid('ES256'),
  use: Joi.string().valid('sig'),
  d: Joi.forbidden().messages({ 'any.unknown': '{{#label}} is a private key member: send the public key only' }),
});

const PEM = /^-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----\s*$/;

export const ap2SettingsSchema = Joi.object({
  issuers: Joi.array()
    .items(
      Joi.object({
        name: Joi.string().trim().min(1).max(200).required(),
        iss: Joi.string().max(500),
        jwks: Joi.object({
          keys: Joi.array()
            .items(publicJwkSchema.keys({ kid: Joi.string().max(200).required() }))
            .min(1)
            .max(20)
            .required(),
        }),
        x5cRoots: Joi.array()
          .items(
            Joi.string()
              .max(20_000)
              .pattern(PEM)
              .messages({ 'string.pattern.base': '{{#label}} must be a PEM certificate' }),
          )
          .min(1)
          .max(10),
      }).or('jwks', 'x5cRoots'),
    )
    .max(20)
    .required(),
});

export const holderKeySchema = Joi.object({ jwk: publicJwkSchema.required() });

export const importSchema = Joi.object({
  credential: Joi.string().min(1).max(MAX_CREDENTIAL_CHARS).required(),
});

/** The `ap2` member of POST /v1/actions/authorize. */
export const authorizeAp2Schema = Joi.object({
  mandate: Joi.string().min(1).max(MAX_CREDENTIAL_CHARS).required(),
  refusal: Joi.string()
    .pattern(/^act_[0-9A-Za-z]{22}$/)
    .messages({ 'string.pattern.base': '{{#label}} must be the id of the refused action' }),
});
