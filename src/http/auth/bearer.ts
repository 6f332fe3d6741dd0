import type { Request } from '@hapi/hapi';

/** The bearer value of the Authorization header, or undefined. Reads nothing else. */
export function bearer(request: Request): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}
