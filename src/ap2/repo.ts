import type { Store } from '../store/index.js';
import type { Ap2MandateRecord, Ap2SettingsRecord, HolderKeyRecord } from './records.js';

/**
 * The AP2 domain's reads and writes: its settings, holder keys, imported mandates and used nonces,
 * which this repo alone writes; and a read of the gate's actions (a presentation's outcome).
 * Writes only inside store.write().
 */
export function ap2Repo(store: Store) {
  const t = store.tables;
  return {
    settings(wid: string): Promise<Ap2SettingsRecord | undefined> {
      return t.ap2Settings.get(wid);
    },
    async putSettings(r: Ap2SettingsRecord): Promise<void> {
      await t.ap2Settings.put(r.workspaceId, r);
    },
    holderKey(wid: string, aid: string): Promise<HolderKeyRecord | undefined> {
      return t.ap2HolderKeys.get([wid, aid]);
    },
    async putHolderKey(r: HolderKeyRecord): Promise<void> {
      await t.ap2HolderKeys.put([r.workspaceId, r.agentId], r);
    },
    mandate(wid: string, aid: string, id: string): Promise<Ap2MandateRecord | undefined> {
      return t.ap2Mandates.get([wid, aid, id]);
    },
    async mandates(wid: string, aid: string): Promise<Ap2MandateRecord[]> {
      return (await t.ap2Mandates.scan([wid, aid])).map((e) => e.value);
    },
    async putMandate(r: Ap2MandateRecord): Promise<void> {
      await t.ap2Mandates.put([r.workspaceId, r.agentId, r.id], r);
    },
    /** Until when (ms) a nonce stays used, if it was. */
    nonce(wid: string, hash: string): Promise<number | undefined> {
      return t.ap2Nonces.get([wid, hash]);
    },
    async useNonce(wid: string, hash: string, untilMs: number): Promise<void> {
      await t.ap2Nonces.put([wid, hash], untilMs);
    },
    /** A gate action's id and status (what a presentation's outcome is read from). */
    async action(wid: string, id: string): Promise<{ id: string; status: string } | undefined> {
      return t.actions.get([wid, id]);
    },
  };
}

export type Ap2Repo = ReturnType<typeof ap2Repo>;
