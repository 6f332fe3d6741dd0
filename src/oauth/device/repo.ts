import type { Store } from '../../store/index.js';
import type { Role, UserRecord, WorkspaceRecord } from '../../people/records.js';
import type { DeviceCodeRecord, PersonLoginRecord, PersonTokenRecord } from '../records.js';

/**
 * `svc login`'s records (service.ts): device codes by hash and their user codes, people's
 * command-line sign-ins and their tokens by hash; and the few records of the people domain it
 * reads to decide who the token stands for (membership, person, workspace). Writes go inside
 * store.write().
 */
export function deviceRepo(store: Store) {
  const t = store.tables;
  return {
    getDevice(hash: string): Promise<DeviceCodeRecord | undefined> {
      return t.deviceCodes.get(hash);
    },
    async putDevice(hash: string, record: DeviceCodeRecord): Promise<void> {
      await t.deviceCodes.put(hash, record);
    },
    /** The device code hash a (normalised) user code stands for. */
    async deviceOfUserCode(code: string): Promise<string | undefined> {
      return (await t.deviceUserCodes.get(code))?.hash;
    },
    async putUserCode(code: string, hash: string, expiresAt: string): Promise<void> {
      await t.deviceUserCodes.put(code, { hash, expiresAt });
    },
    async removeUserCode(code: string): Promise<void> {
      await t.deviceUserCodes.remove(code);
    },

    getLogin(wid: string, id: string): Promise<PersonLoginRecord | undefined> {
      return t.personLogins.get([wid, id]);
    },
    async putLogin(login: PersonLoginRecord): Promise<void> {
      await t.personLogins.put([login.workspaceId, login.id], login);
    },

    /**
     * Inside a write: ends the person's command-line sign-ins in `wid`, or in every workspace they
     * belong to; their tokens are refused from then on (person-tokens.ts reads `endedAt`).
     */
    async endLoginsOf(uid: string, why: string, nowIso: string, wid?: string): Promise<number> {
      const wids = wid !== undefined ? [wid] : (await t.userWorkspaces.scan([uid])).map((e) => String(e.key[1]));
      let ended = 0;
      for (const w of wids)
        for (const { value: login } of await t.personLogins.scan([w])) {
          if (login.userId !== uid || login.endedAt) continue;
          await t.personLogins.put([w, login.id], { ...login, endedAt: nowIso, endedWhy: why });
          ended += 1;
        }
      return ended;
    },

    getToken(hash: string): Promise<PersonTokenRecord | undefined> {
      return t.personTokens.get(hash);
    },
    async putToken(hash: string, token: PersonTokenRecord): Promise<void> {
      await t.personTokens.put(hash, token);
    },
    async removeToken(hash: string): Promise<void> {
      await t.personTokens.remove(hash);
    },

    roleIn(userId: string, wid: string): Promise<Role | undefined> {
      return t.userWorkspaces.get([userId, wid]);
    },
    getUser(id: string): Promise<UserRecord | undefined> {
      return t.users.get(id);
    },
    getWorkspace(wid: string): Promise<WorkspaceRecord | undefined> {
      return t.workspaces.get(wid);
    },
  };
}

export type DeviceRepo = ReturnType<typeof deviceRepo>;
