import Joi from 'joi';

/**
 * Path, query and body pieces routes share, declared once: a workspace id (`ws_` + 22 base62),
 * the list query of every list route (`?limit=` 1-200, default 50, `?cursor=`), a person id, and a list of
 * agent tags (words without spaces, at most 50); `pageOf` reads a validated list query.
 */
export const wid = Joi.string()
  .pattern(/^ws_[0-9A-Za-z]{22}$/)
  .required();
export const page = Joi.object({
  limit: Joi.number().integer().min(1).max(200).default(50),
  cursor: Joi.string().max(64),
});
/** The page a list route was asked for (its query validated by `page`), as the services take it. */
export function pageOf(query: unknown): { limit: number; after?: string } {
  const { limit, cursor } = query as { limit: number; cursor?: string };
  return { limit, ...(cursor ? { after: cursor } : {}) };
}
export const userId = Joi.string().pattern(/^usr_[0-9A-Za-z]{22}$/);
export const tagList = Joi.array()
  .items(
    Joi.string()
      .trim()
      .min(1)
      .max(64)
      .pattern(/^[^\s]+$/),
  )
  .max(50)
  .unique();
