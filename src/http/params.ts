import Joi from 'joi';

/**
 * Path and query pieces every console route shares, declared once: a workspace id (`ws_` + 22
 * base62) and the list query of API.md (`?limit=` 1-200, default 50, `?cursor=`).
 */
export const wid = Joi.string().pattern(/^ws_[0-9A-Za-z]{22}$/).required();
export const page = Joi.object({ limit: Joi.number().integer().min(1).max(200).default(50), cursor: Joi.string().max(64) });
