import type { Person } from './console.js';

/** A service token made as an owner makes one in the console (POST /api/w/{wid}/service-tokens); its value. */
export async function serviceToken(owner: Person, name: string, scopes: string[], expiresInDays = 1): Promise<string> {
  const res = await owner.send('POST', '/service-tokens', { name, scopes, expiresInDays });
  if (res.status !== 201) throw new Error(`POST /service-tokens: ${res.status} ${res.text}`);
  return res.body.token as string;
}
