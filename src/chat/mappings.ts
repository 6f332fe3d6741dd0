import type { Tables } from '../store/index.js';

/**
 * Inside the caller's write: removes every chat identity mapped to a person in a workspace. A
 * person who leaves, or whose access an identity provider revoked, no longer decides anything
 * from chat; a new mapping needs them signed in again (they map only their own identity).
 */
export async function endChatMappingsInWrite(t: Pick<Tables, 'chatUsers'>, wid: string, uid: string): Promise<number> {
  const mine = (await t.chatUsers.scan([wid])).filter((e) => e.value.userId === uid);
  for (const e of mine) await t.chatUsers.remove(e.key);
  return mine.length;
}
