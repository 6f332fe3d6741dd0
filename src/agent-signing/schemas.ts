import Joi from 'joi';

/**
 * What an agent asks svc to sign (docs/signed-requests.md#what-svc-signs).
 * Rules:
 * - `method`: an HTTP method token, upper-cased.
 * - `url`: absolute http or https, at most 8192 characters, without user name or password
 *   (they would be covered and recorded); the fragment is never sent, so never signed.
 * - `headers`: at most 50 fields to cover, by name (an RFC 9110 token, matched without case, each
 *   once); `signature`, `signature-input` and `signature-agent` are svc's to set and `host` is
 *   covered as `@authority`; values are one line of visible text, at most 8192 characters.
 */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
const RESERVED = new Set(['signature', 'signature-input', 'signature-agent', 'host']);

export interface SignHttpInput {
  method: string;
  url: string;
  headers: Record<string, string>;
}

const headersSchema = Joi.object()
  .pattern(
    Joi.string().pattern(TOKEN).messages({ 'string.pattern.base': 'header names must be HTTP field names' }),
    Joi.string()
      .max(8192)
      .allow('')
      .pattern(/^[\t\x20-\x7e\x80-\uffff]*$/)
      .messages({ 'string.pattern.base': '{{#label}} must be one line of text' }),
  )
  .max(50)
  .custom((value: Record<string, string>, helpers) => {
    const seen = new Set<string>();
    for (const name of Object.keys(value)) {
      const lower = name.toLowerCase();
      if (RESERVED.has(lower))
        return helpers.message({
          custom: `the header "${lower}" is not covered on request: ${lower === 'host' ? 'the URL gives @authority' : 'svc sets it'}`,
        });
      if (seen.has(lower)) return helpers.message({ custom: `the header "${lower}" is named twice` });
      seen.add(lower);
    }
    return value;
  });

export const signHttpSchema = Joi.object<SignHttpInput>({
  method: Joi.string()
    .uppercase()
    .pattern(/^[A-Z]{1,20}$/)
    .required()
    .messages({ 'string.pattern.base': '{{#label}} must be an HTTP method such as GET or POST' }),
  url: Joi.string()
    .max(8192)
    .uri({ scheme: ['http', 'https'] })
    .required()
    .custom((value: string, helpers) => {
      const url = new URL(value);
      if (url.username || url.password)
        return helpers.message({ custom: '{{#label}} must not carry a user name or password' });
      if (!url.hostname) return helpers.message({ custom: '{{#label}} must name a host' });
      return value;
    }),
  headers: headersSchema.default({}),
});
