import Joi from 'joi';

/**
 * The integration settings' shapes both their writers validate: the console's and the API's route
 * (integrations/http.ts) and the workspace file of `svc apply` (setup/document.ts).
 */

/** An http(s) address a workspace gives (the chat relay, a GitHub API, a key set). */
export const integrationUrl = Joi.string()
  .uri({ scheme: ['https', 'http'] })
  .max(2048);

/** A Slack workspace id (T…), or null for any. */
export const slackTeamId = Joi.string()
  .pattern(/^[A-Z0-9]{1,32}$/)
  .allow(null);

// A key set of the identity provider holds public keys only: a private or symmetric member is refused, never stored.
const PRIVATE_MEMBERS = Object.fromEntries(
  ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'].map((m) => [
    m,
    Joi.any()
      .forbidden()
      .messages({ 'any.unknown': 'a key set here holds public keys only; {{#label}} is a private key member' }),
  ]),
);

/** Whom a Shared Signals transmitter is trusted as: its issuer and audience, and its keys by address or given. */
export const ssfTrust = {
  issuer: Joi.string().min(1).max(2048).required(),
  audience: Joi.string().min(1).max(2048).required(),
  jwksUri: integrationUrl,
  jwks: Joi.object({
    keys: Joi.array()
      .items(Joi.object({ kty: Joi.string().valid('EC', 'RSA').required(), ...PRIVATE_MEMBERS }).unknown(true))
      .min(1)
      .max(20)
      .required(),
  }),
};
