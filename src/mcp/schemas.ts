import Joi from 'joi';

/**
 * The bodies of the upstream-server routes, the console's (/api/w/{wid}/mcp-servers) and the
 * machine ones (/v1/admin/mcp-servers) alike: one shape for both callers.
 */
export const serverName = Joi.string().max(64).required();
export const toolName = Joi.string().max(128).required();

export const addServerSchema = Joi.object({
  name: Joi.string().required(),
  url: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .required(),
  secret: Joi.string().max(4096).allow(null),
  allowTools: Joi.array().items(Joi.string().max(128)).max(500).allow(null),
  unprefixed: Joi.boolean(),
});

export const approveToolSchema = Joi.object({
  hash: Joi.string()
    .pattern(/^[0-9a-f]{64}$/)
    .required(),
  callsPerMinute: Joi.number().integer().min(1).max(1_000_000).allow(null),
});
